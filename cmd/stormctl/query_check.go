package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/queries"
)

// checkOptions are the flags of `query check`.
type checkOptions struct {
	params      queryParams
	all         bool
	failOn      string
	requireData bool
	at          string
	step        time.Duration
	top         int
}

func newQueryCheckCmd(f *Factory) *cobra.Command {
	o := &checkOptions{}
	cmd := &cobra.Command{
		Use:   "check [ID...|--all]",
		Short: "Evaluate thresholds; exit 4 if any is breached (a runbook or CI gate)",
		Long: `check evaluates each query's thresholds. A threshold with a "for" duration is
breached only if it held for that long (evaluated as a subquery over the window).
Exit 0 if nothing is breached, 4 if anything is, 1 if a query could not run.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkTop(cmd, o.top, &o.params); err != nil {
				return err
			}
			return runCheck(cmd, f, o, args)
		},
	}
	o.params.bind(cmd)
	bindTop(cmd, &o.top, &o.params)
	fl := cmd.Flags()
	fl.BoolVar(&o.all, "all", false, "check every saved query the pack answers")
	fl.StringVar(&o.failOn, "fail-on", "crit", "lowest status that fails the check: warn or crit")
	fl.BoolVar(&o.requireData, "require-data", false, "treat no data as a failure")
	fl.StringVar(&o.at, "time", "", "evaluation time: RFC 3339, Unix seconds, or -10m (default now)")
	fl.DurationVar(&o.step, "step", 15*time.Second, "subquery resolution for sustained (for:) thresholds")
	return cmd
}

func runCheck(cmd *cobra.Command, f *Factory, o *checkOptions, args []string) error {
	if o.all == (len(args) > 0) {
		return exit.NewUsage(errors.New("give query ids or --all, not both or neither"))
	}
	failOn, err := queries.ParseLevel(o.failOn)
	if err != nil || failOn < queries.LevelWarn {
		return exit.NewUsage(fmt.Errorf("--fail-on %q: want warn or crit", o.failOn))
	}
	at, err := evalTime(o.at, time.Now())
	if err != nil {
		return err
	}
	cat, err := f.Catalog()
	if err != nil {
		return err
	}
	if o.all {
		for _, q := range cat.Queries() {
			args = append(args, q.ID)
		}
	}
	var rendered []*queries.Rendered
	var fleets []*queries.Fleet
	var reqs []queries.Request
	for _, id := range args {
		r, err := o.params.render(f, id)
		var unsupported *queries.UnsupportedError
		if o.all && errors.As(err, &unsupported) {
			fmt.Fprintf(f.IO.ErrOut, "%s: skipped: %v\n", id, err)
			continue
		}
		if err != nil {
			return err
		}
		rendered = append(rendered, r)
		key := requestKey(r, o.params)
		if o.top > 0 {
			fl, freqs, err := o.fleetRequests(f, r, key, at)
			if err != nil {
				return err
			}
			fleets, reqs = append(fleets, fl), append(reqs, freqs...)
			continue
		}
		reqs = append(reqs, queries.Request{Key: key, Expr: r.Expr, Time: at, Metrics: r.Metrics})
		if r.Threshold.For > 0 {
			reqs = append(reqs, queries.Request{Key: key + "|sustained", Expr: r.Sustained(o.step), Time: at, Metrics: r.Metrics})
		}
	}
	runner, err := f.Runner()
	if err != nil {
		return err
	}
	results := runner.RunAll(cmd.Context(), reqs)
	out := make([]resultJSON, 0, len(rendered))
	var failed, errored []string
	i := 0
	for n, r := range rendered {
		now := results[i]
		i++
		var sustained *queries.Result
		if r.Threshold.For > 0 {
			sustained = &results[i]
			i++
		}
		var res resultJSON
		if o.top > 0 {
			res = toFleetResult(fleets[n], now, sustained)
		} else {
			res = toResult(r, now, sustained)
		}
		switch {
		case res.Error != "":
			errored = append(errored, r.QueryID)
		case res.breaches(failOn) || (o.requireData && res.NoData != nil):
			failed = append(failed, r.QueryID)
		}
		out = append(out, res)
	}
	if err := printResults(f, out, false); err != nil {
		return err
	}
	if len(errored) > 0 {
		return &exit.Silent{Err: fmt.Errorf("could not run: %s", strings.Join(errored, ", "))}
	}
	if len(failed) > 0 {
		sort.Strings(failed)
		return &exit.CheckFailedError{Msg: "breached: " + strings.Join(failed, ", ")}
	}
	return nil
}

// breaches reports whether the result fails a check at failOn: over every
// series of a --top result (held for the for: window when the threshold
// has one), else over its series, each at the lower of its level now and
// the level it held.
func (r resultJSON) breaches(failOn queries.Level) bool {
	switch {
	case r.fleet != nil && r.Threshold.For != "":
		return r.heldFleet != nil && r.heldFleet.Breaches(failOn)
	case r.fleet != nil:
		return r.fleet.Breaches(failOn)
	}
	return r.eval.Breaches(failOn)
}
