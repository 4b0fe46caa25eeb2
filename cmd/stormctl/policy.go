package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/policy"
	"github.com/stormctl/stormctl/policy/rehearse"
)

func newPolicyCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Read every layer's retry policy along a call path and predict the storm",
	}
	cmd.AddCommand(newPolicyAnalyzeCmd(f))
	return cmd
}

type policyAnalyzeOptions struct {
	paths                          []string
	rate, format, failOn, labClass string
	lab                            bool
	labOut                         string
	seed                           uint64
}

// policyReport is the analysis with the lab's rehearsal when --lab ran.
type policyReport struct {
	*policy.Analysis
	Lab *rehearse.Comparison `json:"lab,omitempty"`
}

func newPolicyAnalyzeCmd(f *Factory) *cobra.Command {
	o := &policyAnalyzeOptions{}
	cmd := &cobra.Command{
		Use:   "analyze FILE... [--rate 400/s] [--fail-on warn|crit] [--lab]",
		Short: "Predict a call path's worst case from its retry policies; exit 4 on findings at --fail-on",
		Long: `analyze reads the retry policies of one call path, outermost first, and
predicts its worst case from configuration alone: attempts per request (the
product across layers, and per failure class), how long a request holds the
entry's pool (timeouts plus backoff, capped by deadlines), the concurrency
that demands at the offered rate (Little's law), the failing rate at which the
pool saturates, and the load on the dependency. Findings name each problem,
where, and its fix; any at or above --fail-on exits 4, so it gates CI.

Each FILE is a CallPath (apiVersion: stormctl/v1, kind: CallPath) or a policy
in its own system's syntax, detected by content: an Envoy v3 RouteConfiguration,
Cluster or Bootstrap; an Istio VirtualService (with its DestinationRule); a
Spring Boot application.yml with resilience4j instances; a gRPC service config.
FILE#NAME picks one policy of a file that has several (a route, an instance,
a method). Hops come in file order, outermost first; a CallPath gives the rate,
deadline and dependency. The format is in docs/policy.md.

--lab turns the path into a lab scenario (the lab's own scenario format) with
the dependency failing every attempt in one class (--lab-class, default the
one that holds the pool longest), runs it and prints predicted and simulated
figures side by side; --lab-out FILE writes the scenario for 'stormctl lab run'.`,
		Example: `  stormctl policy analyze checkout.yaml
  stormctl policy analyze --path checkout.yaml envoy.yaml vs.yaml --rate 400/s -o json
  stormctl policy analyze checkout.yaml application.yml#inventory --fail-on warn
  stormctl policy analyze checkout.yaml --lab --lab-out checkout-storm.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPolicyAnalyze(cmd.Context(), f, o, args)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&o.paths, "path", nil, "a file of the path (repeatable; the same as FILE arguments, which follow it)")
	fl.StringVar(&o.rate, "rate", "", "offered logical requests per second at the entry, e.g. 400/s (overrides the CallPath's rate)")
	fl.StringVar(&o.format, "format", "", "importer for every file that is not a CallPath: "+strings.Join(policy.Formats[1:], ", ")+" (default: detect)")
	fl.StringVar(&o.failOn, "fail-on", "crit", "lowest finding severity that exits 4: warn or crit")
	fl.BoolVar(&o.lab, "lab", false, "rehearse the prediction in the storm lab and compare")
	fl.StringVar(&o.labOut, "lab-out", "", "write the lab scenario YAML to this file")
	fl.StringVar(&o.labClass, "lab-class", "", "failure class of the rehearsal: timeout, connect_error, reset, 5xx or 429")
	fl.Uint64Var(&o.seed, "seed", 1, "the lab's random seed")
	_ = cmd.RegisterFlagCompletionFunc("fail-on", cobra.FixedCompletions([]string{"warn", "crit"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(policy.Formats[1:], cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func runPolicyAnalyze(ctx context.Context, f *Factory, o *policyAnalyzeOptions, args []string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	files := append(append([]string(nil), o.paths...), args...)
	if len(files) == 0 {
		return exit.NewUsage(fmt.Errorf("give the files of one call path, outermost first"))
	}
	failOn := policy.Severity(o.failOn)
	if failOn != policy.Warn && failOn != policy.Crit {
		return exit.NewUsage(fmt.Errorf("--fail-on %q: want warn or crit", o.failOn))
	}
	inputs, err := policy.ReadFiles(files)
	if err != nil {
		return exit.NewUsage(err)
	}
	p, err := policy.Load(inputs, policy.LoadOptions{Format: o.format})
	if err != nil {
		return exit.NewUsage(err)
	}
	if o.rate != "" {
		if p.Rate, err = policy.ParseRate(o.rate); err != nil {
			return exit.NewUsage(err)
		}
	}
	a := policy.Analyze(p)
	rep := policyReport{Analysis: a}
	if o.lab || o.labOut != "" {
		if p.Rate <= 0 {
			return exit.NewUsage(fmt.Errorf("--lab needs the offered rate: give rate: in the CallPath or --rate"))
		}
		class, err := labClass(a, o.labClass)
		if err != nil {
			return err
		}
		if o.labOut != "" {
			_, data, _, err := rehearse.Scenario(p, class)
			if err != nil {
				return exit.NewUsage(err)
			}
			if err := os.WriteFile(o.labOut, data, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "policy: wrote lab scenario %s (stormctl lab run --scenario %s)\n", o.labOut, o.labOut)
		}
		if o.lab {
			fmt.Fprintf(f.IO.ErrOut, "policy: rehearsing %s in the lab with %s failing every attempt (%s)\n", p.Name, p.Dependency.Name, class)
			if rep.Lab, err = rehearse.Run(ctx, p, class, o.seed); err != nil {
				return err
			}
			if !rep.Lab.Agree {
				fmt.Fprintf(f.IO.ErrOut, "policy: the lab does not agree with the prediction within ±%g%% (see the lab notes)\n", rehearse.Tolerance*100)
			}
		}
	}
	if err := f.Print(rep, func(tty bool) error { return printPolicy(f, rep, tty) }); err != nil {
		return err
	}
	n := 0
	for _, fd := range a.Findings {
		if fd.Severity.Rank() >= failOn.Rank() {
			n++
		}
	}
	if n > 0 {
		return &exit.CheckFailedError{Msg: fmt.Sprintf("%d finding(s) at %s or above", n, failOn)}
	}
	return nil
}

func labClass(a *policy.Analysis, name string) (policy.Class, error) {
	if name == "" {
		name = a.OccupancyClass
	}
	for _, c := range policy.Classes {
		if c.String() == name {
			return c, nil
		}
	}
	return 0, exit.NewUsage(fmt.Errorf("--lab-class %q: want timeout, connect_error, reset, 5xx or 429", name))
}
