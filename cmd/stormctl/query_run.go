package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/output"
	"github.com/stormctl/stormctl/queries"
)

type pointJSON struct {
	T time.Time `json:"t"`
	V *float64  `json:"v"`
}

type seriesJSON struct {
	Labels map[string]string `json:"labels"`
	// Value is null when Prometheus returned NaN or ±Inf; ValueText says which.
	Value     *float64 `json:"value"`
	ValueText string   `json:"value_text,omitempty"`
	Status    string   `json:"status"`
	// Held is the level held over the whole for: window (query check only).
	Held   string      `json:"held,omitempty"`
	Points []pointJSON `json:"points,omitempty"`
	// level and held are Status and Held as levels, for the table.
	level, held queries.Level
}

type noDataJSON struct {
	Missing []string `json:"missing,omitempty"`
	Message string   `json:"message"`
}

type resultJSON struct {
	renderedInfo
	Threshold thresholdJSON `json:"threshold"`
	At        time.Time     `json:"at"`
	Status    string        `json:"status"`
	Series    []seriesJSON  `json:"series"`
	NoData    *noDataJSON   `json:"no_data,omitempty"`
	Warnings  []string      `json:"warnings,omitempty"`
	Infos     []string      `json:"infos,omitempty"`
	Error     string        `json:"error,omitempty"`
	// Fleet is set by --top: Series are then the worst only.
	Fleet *fleetJSON `json:"fleet,omitempty"`
	// eval is what the series say; fleet and heldFleet are the counts of a
	// --top result over every series, now and held for the for: window.
	eval             queries.Evaluation
	fleet, heldFleet *queries.FleetResult
}

func finite(v float64) (*float64, string) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil, strconv.FormatFloat(v, 'f', -1, 64)
	}
	return &v, ""
}

func formatValue(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// evalTime parses --time: empty for now, RFC 3339, a Unix timestamp, or a
// negative offset such as -10m.
func evalTime(s string, now time.Time) (time.Time, error) {
	switch {
	case s == "":
		return time.Time{}, nil
	case strings.HasPrefix(s, "-"):
		d, err := model.ParseDuration(s[1:])
		if err != nil {
			return time.Time{}, exit.NewUsage(fmt.Errorf("--time %q: %w", s, err))
		}
		if time.Duration(d) > now.Sub(time.Unix(0, 0)) {
			return time.Time{}, exit.NewUsage(fmt.Errorf("--time %q: want a duration between now and 1970", s))
		}
		return now.Add(-time.Duration(d)), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	// Unix seconds that time.Unix can hold in nanoseconds: 1970 to 2262.
	if sec, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(sec) || sec < 0 || sec >= math.MaxInt64/1e9 {
			return time.Time{}, exit.NewUsage(fmt.Errorf("--time %.40q: a Unix time must be between 0 and %d", s, int64(math.MaxInt64)/1e9))
		}
		return time.Unix(0, int64(sec*1e9)), nil
	}
	return time.Time{}, exit.NewUsage(fmt.Errorf("--time %.40q: want RFC 3339, a Unix time or -DURATION", s))
}

// toResult turns a runner result into the stable JSON shape. sustained,
// when not nil, is the result of the threshold's for: window.
func toResult(r *queries.Rendered, res queries.Result, sustained *queries.Result) resultJSON {
	out := resultJSON{renderedInfo: renderedJSON(r), Threshold: thresholdOf(r.Threshold), At: res.At,
		Series: []seriesJSON{}, Warnings: res.Warnings, Infos: res.Infos, Status: queries.LevelNoData.String()}
	if res.Err != nil {
		out.Error = res.Err.Error()
		out.Status = "error"
		return out
	}
	if res.NoData != nil {
		out.NoData = &noDataJSON{Missing: res.NoData.Missing, Message: res.NoData.Message}
		return out
	}
	out.eval = r.Threshold.EvaluateResult(res, sustained)
	out.Status = out.eval.Level.String()
	for _, sl := range out.eval.Series {
		sj := seriesJSON{Labels: sl.Series.Labels, Status: sl.Level.String(), level: sl.Level, held: sl.Held}
		for _, p := range sl.Series.Points {
			pv, _ := finite(p.V)
			sj.Points = append(sj.Points, pointJSON{T: p.T, V: pv})
		}
		sj.Value, sj.ValueText = finite(sl.Value)
		if sl.Sustained {
			sj.Held = sl.Held.String()
		}
		out.Series = append(out.Series, sj)
	}
	return out
}

// printResults writes results as one table (or JSON/YAML when asked), and
// Prometheus warnings and no-data explanations to stderr.
func printResults(f *Factory, results []resultJSON, single bool) error {
	var v any = results
	if single {
		v = results[0]
	}
	return f.Print(v, func(tty bool) error {
		t := output.NewTable(f.IO.Out, tty, "query", "series", "value", "status", "unit")
		var notes []string // printed after the table, so the table reads first
		for _, r := range results {
			for _, w := range r.Warnings {
				notes = append(notes, fmt.Sprintf("%s: prometheus warning: %s", r.ID, w))
			}
			for _, i := range r.Infos {
				notes = append(notes, fmt.Sprintf("%s: prometheus info: %s", r.ID, i))
			}
			if b := boundNote(&queries.Rendered{Bound: r.Bound, Note: r.Note}); b != "" {
				notes = append(notes, fmt.Sprintf("%s (%s)%s", r.ID, r.Pack, b))
			}
			switch {
			case r.Error != "":
				t.Row(r.ID, "-", "-", "error", r.Unit)
				notes = append(notes, fmt.Sprintf("%s: %s", r.ID, r.Error))
			case r.NoData != nil:
				t.Row(r.ID, "-", "no data", queries.LevelNoData.String(), r.Unit)
				notes = append(notes, fmt.Sprintf("%s: no data: %s", r.ID, r.NoData.Message))
			}
			for _, s := range r.Series {
				val := s.ValueText
				if s.Value != nil {
					val = formatValue(*s.Value)
				}
				status := s.Status
				if s.Held != "" && s.held < s.level {
					status += " (held " + s.Held + " for " + r.Threshold.For + ")"
				}
				name := queries.SeriesKey(s.Labels) // escaped by the table and the stream, as everywhere
				t.Row(r.ID, name, val, status, r.Unit)
				if s.level == queries.LevelNaN {
					notes = append(notes, fmt.Sprintf("%s %s: %s", r.ID, name, queries.NaNNoData))
				}
			}
		}
		if err := t.Flush(); err != nil {
			return err
		}
		printFleetSummaries(f, results, tty)
		for _, n := range notes {
			fmt.Fprintln(f.IO.ErrOut, n)
		}
		return nil
	})
}

func newQueryRunCmd(f *Factory) *cobra.Command {
	var p queryParams
	var at, rng, step string
	var top int
	cmd := &cobra.Command{
		Use:   "run ID",
		Short: "Run a saved query: value per series with its threshold status",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkTop(cmd, top, &p); err != nil {
				return err
			}
			r, err := p.render(f, args[0])
			if err != nil {
				return err
			}
			var fl *queries.Fleet
			if top > 0 {
				if fl, err = p.renderFleet(f, args[0], top); err != nil {
					return err
				}
			}
			q := queries.Request{Key: requestKey(r, p), Expr: r.Expr, Metrics: r.Metrics}
			if fl != nil {
				q.Key, q.Expr = fleetKey(q.Key, top, p.recorded), fl.Expr
				q.Fallback, q.FallbackNote = fl.Fallback, fl.FallbackNote
			}
			if q.Time, err = evalTime(at, time.Now()); err != nil {
				return err
			}
			if rng != "" {
				if q.Range, err = parseRange(q.Time, rng, step); err != nil {
					return err
				}
			}
			if fl != nil && q.Range != nil {
				q.Expr = fl.RangeExpr
			}
			runner, err := f.Runner()
			if err != nil {
				return err
			}
			res := runner.Run(cmd.Context(), q)
			if res.Err != nil {
				return res.Err
			}
			out := toResult(r, res, nil)
			if fl != nil {
				out = toFleetResult(fl, res, nil)
			}
			return printResults(f, []resultJSON{out}, true)
		},
	}
	p.bind(cmd)
	bindTop(cmd, &top, &p)
	cmd.Flags().StringVar(&at, "time", "", "evaluation time: RFC 3339, Unix seconds, or -10m (default now)")
	cmd.Flags().StringVar(&rng, "range", "", "run over a range ending at --time, e.g. 15m (query_range)")
	cmd.Flags().StringVar(&step, "step", "15s", "resolution of --range")
	return cmd
}

func requestKey(r *queries.Rendered, p queryParams) string {
	return strings.Join([]string{r.QueryID, r.Pack, p.service, p.dependency, p.pool, p.window}, "|")
}

func parseRange(end time.Time, rng, step string) (*queries.Range, error) {
	d, err := model.ParseDuration(rng)
	if err != nil || d <= 0 {
		return nil, exit.NewUsage(fmt.Errorf("--range %q: want a duration such as 15m", rng))
	}
	s, err := model.ParseDuration(step)
	if err != nil || s <= 0 {
		return nil, exit.NewUsage(fmt.Errorf("--step %q: want a duration such as 15s", step))
	}
	if time.Duration(d)/time.Duration(s) > 11000 {
		return nil, exit.NewUsage(fmt.Errorf("--range %s / --step %s is over 11000 points: use a larger step", rng, step))
	}
	if end.IsZero() {
		end = time.Now()
	}
	return &queries.Range{Start: end.Add(-time.Duration(d)), End: end, Step: time.Duration(s)}, nil
}
