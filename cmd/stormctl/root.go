package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/iostreams"
)

// Main runs stormctl with args and returns the process exit code. Every
// error is printed once to stderr and mapped to its code here, nowhere else.
func Main(args []string, io *iostreams.IOStreams) int {
	defer io.Guard()()
	f := newFactory(io, os.Getenv)
	root := newRootCmd(f)
	root.SetArgs(args)
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.ErrOut)
	err := root.Execute()
	if err != nil && strings.HasPrefix(err.Error(), "unknown command") {
		err = exit.NewUsage(err)
	}
	if err != nil && !f.printed {
		printFailure(io.Out, f.flags.output, err)
	}
	var silent *exit.Silent
	if err != nil && !errors.As(err, &silent) {
		fmt.Fprintf(io.ErrOut, "stormctl: %v\n", err)
	}
	return exit.Code(err)
}

func newRootCmd(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "stormctl",
		Short: "See and stop retry storms: amplification queries and guarded, journaled levers",
		Long: `stormctl shows whether retries have become the load on a struggling dependency,
and pulls guarded, reversible, journaled levers to stop the storm: retries off,
breakers forced open, autoscaling frozen, degraded mode, load shed.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&f.flags.Context, "context", "", "config context to use (env STORMCTL_CONTEXT)")
	pf.StringVar(&f.flags.PrometheusURL, "prometheus-url", "", "Prometheus HTTP API base URL (env STORMCTL_PROMETHEUS_URL)")
	pf.StringVar(&f.flags.RedisURL, "redis-url", "", "control-plane Redis URL, redis:// or rediss:// (env STORMCTL_REDIS_URL)")
	pf.StringVar(&f.flags.Actor, "actor", "", "who is acting, for the journal (env STORMCTL_ACTOR, default $USER)")
	pf.StringVar(&f.flags.SigningKey, "signing-key", "", "SSH key that signs journal entries: private key, or .pub of an ssh-agent key; none to not sign (env STORMCTL_SIGNING_KEY, config journal.signing-key, default: first ssh-agent key)")
	pf.StringVarP(&f.flags.output, "output", "o", "", "output format: table, json or yaml (journal tail: JSON Lines); failures print {\"error\": ...} too")
	pf.StringVar(&f.flags.configPath, "config", "", "config file (env STORMCTL_CONFIG, default $XDG_CONFIG_HOME/stormctl/config.yaml)")
	pf.StringArrayVar(&f.flags.queriesDirs, "queries", nil, "extra directory of saved-query YAML files (repeatable; config: queries-dirs)")
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return exit.NewUsage(err) })
	// Every command refuses an unknown -o, even one that prints no result.
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		_, err := f.Output()
		return err
	}

	root.AddCommand(newVersionCmd(f))
	root.AddCommand(newQueryCmd(f))
	root.AddCommand(newStatusCmd(f))
	root.AddCommand(newJournalCmd(f))
	root.AddCommand(newACLCmd(f))
	root.AddCommand(newActionCmd(f))
	root.AddCommand(newShortcutCmds(f)...)
	root.AddCommand(newIncidentCmd(f))
	root.AddCommand(newLabCmd(f))
	root.AddCommand(newPolicyCmd(f))
	root.AddCommand(newPlaybookCmd(f))
	root.AddCommand(newDashCmd(f))
	root.AddCommand(newDemoCmd(f))
	root.AddCommand(newActuateCmd(f))
	root.AddCommand(newFlagdCmd(f), newFlagsCmd(f))
	root.AddCommand(newAlertsCmd(f), newAutopilotCmd(f))
	// No arguments on a terminal opens the dashboard; anywhere else, help.
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		if f.IO.IsStdinTTY() && f.IO.IsStdoutTTY() {
			return runDash(cmd.Context(), f, defaultDashOptions(), nil)
		}
		return cmd.Help()
	}
	return root
}

// usageArgs wraps a cobra argument validator so that its errors exit 2.
func usageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error { return exit.NewUsage(v(cmd, args)) }
}
