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
	if o.failOn != string(queries.Warn) && o.failOn != string(queries.Crit) {
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
		var res resultJSON
		if o.top > 0 {
			res, _ = toFleetResult(fleets[n], results[i])
		} else {
			res = toResult(r, results[i])
		}
		i++
		if r.Threshold.For > 0 {
			if o.top > 0 {
				markHeld(&res, fleets[n], results[i])
			} else {
				markSustained(&res, r.Threshold, results[i])
			}
			i++
		}
		switch {
		case res.Error != "":
			errored = append(errored, r.QueryID)
		case fleetBreached(res, o.failOn) || (o.requireData && res.NoData != nil):
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

// markSustained records, per series, the threshold level that held over the
// whole for: window (the sustained subquery), beside the level it is at now.
func markSustained(res *resultJSON, th queries.Threshold, sustained queries.Result) {
	if sustained.Err != nil {
		return
	}
	held := map[string]string{}
	for _, s := range sustained.Series {
		held[seriesName(s.Labels)] = string(th.Evaluate(s.Value))
	}
	for i := range res.Series {
		s := &res.Series[i]
		if s.Status != string(queries.Warn) && s.Status != string(queries.Crit) {
			continue
		}
		if h, ok := held[seriesName(s.Labels)]; ok {
			s.Held = h
		} else {
			s.Held = string(queries.OK)
		}
	}
}

// level is the status that counts for a check: the lower of the current
// level and, for thresholds with for:, the level held over the window.
func level(s seriesJSON) int {
	r := rank[s.Status]
	if s.Held != "" && rank[s.Held] < r {
		r = rank[s.Held]
	}
	return r
}

// breached reports whether any series is at or above the failing level.
func breached(res resultJSON, failOn string) bool {
	for _, s := range res.Series {
		if l := level(s); l >= rank[failOn] && l >= rank[string(queries.Warn)] {
			return true
		}
	}
	return false
}
