package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/queries"
)

// fleetJSON is what a --top run adds to a result: how many series the
// query has in all, past warn and past crit (a level the threshold lacks
// is left out), and for thresholds with for: how many held there.
type fleetJSON struct {
	Top      int  `json:"top"`
	Total    int  `json:"total"`
	Warn     *int `json:"warn,omitempty"`
	Crit     *int `json:"crit,omitempty"`
	HeldWarn *int `json:"held_warn,omitempty"`
	HeldCrit *int `json:"held_crit,omitempty"`
}

func bindTop(cmd *cobra.Command, top *int, p *queryParams) {
	cmd.Flags().IntVar(top, "top", 0, fmt.Sprintf(
		"reduce on the server: only the N worst series, with counts of every series past warn and crit (1-%d)", queries.MaxTop))
	cmd.Flags().BoolVar(&p.recorded, "recorded", false,
		"with --top: rank the recorded series of 'stormctl query export --format rules' instead of the raw metrics")
}

func checkTop(cmd *cobra.Command, top int, p *queryParams) error {
	if cmd.Flags().Changed("top") && (top < 1 || top > queries.MaxTop) {
		return exit.NewUsage(fmt.Errorf("--top %d: want 1 to %d", top, queries.MaxTop))
	}
	if p.recorded && (top == 0 || p.service != "" || p.dependency != "" || p.pool != "" || p.window != "") {
		return exit.NewUsage(fmt.Errorf("--recorded ranks the whole fleet as the rules recorded it: give --top, and no --service, --dependency, --pool or --window"))
	}
	return nil
}

// renderFleet resolves the pack like render and renders query id reduced
// to its top worst series and counts.
func (p *queryParams) renderFleet(f *Factory, id string, top int) (*queries.Fleet, error) {
	cat, pack, qp, err := p.resolve(f)
	if err != nil {
		return nil, err
	}
	if p.recorded {
		return cat.RenderRecordedFleet(id, pack, top)
	}
	return cat.RenderFleet(id, pack, qp, top)
}

// fleetKey is the runner key of a fleet request.
func fleetKey(key string, top int, recorded bool) string {
	key += "|top" + strconv.Itoa(top)
	if recorded {
		key += "|recorded"
	}
	return key
}

func levelCount(n int) *int {
	if n < 0 {
		return nil
	}
	return &n
}

// toFleetResult is toResult for a fleet expression: the worst series as
// the result's series, the counts beside them; sustained, when not nil,
// is the fleet expression of the values held over the for: window
// (Fleet.HeldFleet).
func toFleetResult(fl *queries.Fleet, res queries.Result, sustained *queries.Result) resultJSON {
	split := queries.SplitFleet(fl, res.Series)
	res.Series = split.Worst
	var held *queries.FleetResult
	if sustained != nil && sustained.Err == nil {
		h := queries.SplitFleet(fl, sustained.Series)
		worst := *sustained
		worst.Series, held = h.Worst, &h
		sustained = &worst
	}
	out := toResult(fl.Rendered, res, sustained)
	out.Expr = fl.Expr
	if out.Error == "" && out.NoData == nil {
		out.fleet = &split
		out.Fleet = &fleetJSON{Top: fl.Top, Total: split.Total, Warn: levelCount(split.Warn), Crit: levelCount(split.Crit)}
		if held != nil {
			out.heldFleet = held
			out.Fleet.HeldWarn, out.Fleet.HeldCrit = levelCount(held.Warn), levelCount(held.Crit)
		}
	}
	return out
}

// fleetSummary is "amplification: 3 crit, 11 warn of 2,940 series (worst 5
// shown)", and the held counts when there are some.
func fleetSummary(r resultJSON) string {
	s := fmt.Sprintf("%s (worst %d shown)", r.fleet.Text(r.ID), min(r.Fleet.Top, len(r.Series)))
	if h := r.heldFleet; h != nil {
		s += fmt.Sprintf("; held for %s: %d crit, %d warn", r.Threshold.For, max(h.Crit, 0), max(h.Warn, 0))
	}
	return sanitize.Mask(s, '\uFFFD')
}

// printFleetSummaries writes a summary line per fleet result: after the
// table on a terminal, on stderr in a pipe so the rows stay rows.
func printFleetSummaries(f *Factory, results []resultJSON, tty bool) {
	var lines []string
	for _, r := range results {
		if r.Fleet != nil {
			lines = append(lines, fleetSummary(r))
		}
	}
	if len(lines) == 0 {
		return
	}
	var w io.Writer = f.IO.ErrOut
	if tty {
		w = f.IO.Out
		lines = append([]string{""}, lines...)
	}
	fmt.Fprintln(w, strings.Join(lines, "\n"))
}

// fleetRequests are the requests of a --top check of r: the fleet
// expression, and for a threshold with for: that of the sustained values.
func (o *checkOptions) fleetRequests(f *Factory, r *queries.Rendered, key string, at time.Time) (*queries.Fleet, []queries.Request, error) {
	fl, err := o.params.renderFleet(f, r.QueryID, o.top)
	if err != nil {
		return nil, nil, err
	}
	key = fleetKey(key, o.top, o.params.recorded)
	reqs := []queries.Request{fl.Request(key, at)}
	if r.Threshold.For > 0 {
		held, err := fl.HeldFleet(o.step)
		if err != nil {
			return nil, nil, err
		}
		reqs = append(reqs, queries.Request{Key: key + "|sustained", Expr: held, Time: at, Metrics: fl.Metrics})
	}
	return fl, reqs, nil
}
