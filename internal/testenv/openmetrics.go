package testenv

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// OpenMetrics builds test data in the OpenMetrics text format, to be
// backfilled into a test Prometheus with PromOptions.OpenMetrics.
//
// Series of one metric family are written together, in the order the family
// was first added, each series with ascending timestamps: promtool rejects
// interleaved families and out-of-order samples.
type OpenMetrics struct {
	families []*omFamily
	byName   map[string]*omFamily
}

type omFamily struct {
	name, typ string
	lines     []string
}

// NewOpenMetrics returns an empty data set.
func NewOpenMetrics() *OpenMetrics {
	return &OpenMetrics{byName: map[string]*omFamily{}}
}

// Counter adds one counter series: values[i] is the sample at start+i*step.
// A name ending in _total becomes the family without the suffix, as the
// format requires; any other name is written as an unknown-typed family, so
// tests can reproduce exporters that drop the suffix.
func (o *OpenMetrics) Counter(name string, labels map[string]string, start time.Time, step time.Duration, values []float64) {
	family, typ := strings.TrimSuffix(name, "_total"), "counter"
	if family == name {
		typ = "unknown"
	}
	o.series(o.family(family, typ), name, labels, start, step, values)
}

// Gauge adds one gauge series: values[i] is the sample at start+i*step.
func (o *OpenMetrics) Gauge(name string, labels map[string]string, start time.Time, step time.Duration, values []float64) {
	o.series(o.family(name, "gauge"), name, labels, start, step, values)
}

// Histogram adds a classic histogram series (name_bucket{le}, name_count,
// name_sum). buckets[i][j] is the cumulative count at sample i for the upper
// bound les[j]; les must end with +Inf, and name_count is the +Inf bucket.
func (o *OpenMetrics) Histogram(name string, labels map[string]string, start time.Time, step time.Duration, les []float64, buckets [][]float64, sums []float64) {
	if len(les) == 0 || !math.IsInf(les[len(les)-1], 1) {
		panic("testenv: histogram bounds must end with +Inf")
	}
	if len(buckets) != len(sums) {
		panic("testenv: histogram needs one sum per sample")
	}
	f := o.family(name, "histogram")
	column := func(j int) []float64 {
		c := make([]float64, len(buckets))
		for i, b := range buckets {
			if len(b) != len(les) {
				panic(fmt.Sprintf("testenv: histogram sample %d has %d buckets, want %d", i, len(b), len(les)))
			}
			c[i] = b[j]
		}
		return c
	}
	for j, le := range les {
		withLE := map[string]string{"le": formatFloat(le)}
		for k, v := range labels {
			withLE[k] = v
		}
		o.series(f, name+"_bucket", withLE, start, step, column(j))
	}
	o.series(f, name+"_count", labels, start, step, column(len(les)-1))
	o.series(f, name+"_sum", labels, start, step, sums)
}

// String renders the data set: families grouped, each with its # TYPE line,
// ending with "# EOF".
func (o *OpenMetrics) String() string {
	var b strings.Builder
	for _, f := range o.families {
		fmt.Fprintf(&b, "# TYPE %s %s\n", f.name, f.typ)
		for _, l := range f.lines {
			b.WriteString(l)
		}
	}
	b.WriteString("# EOF\n")
	return b.String()
}

// Cumulate turns a per-second rate profile into counter values:
// rates[i] is the rate over the step that ends at sample i, so
// out[i] = out[i-1] + rates[i]*step (and out[0] = rates[0]*step).
func Cumulate(rates []float64, step time.Duration) []float64 {
	out := make([]float64, len(rates))
	sum := 0.0
	for i, r := range rates {
		sum += r * step.Seconds()
		out[i] = sum
	}
	return out
}

func (o *OpenMetrics) family(name, typ string) *omFamily {
	f, ok := o.byName[name]
	if !ok {
		f = &omFamily{name: name, typ: typ}
		o.byName[name] = f
		o.families = append(o.families, f)
	} else if f.typ != typ {
		panic(fmt.Sprintf("testenv: metric family %s added as %s and as %s", name, f.typ, typ))
	}
	return f
}

func (o *OpenMetrics) series(f *omFamily, name string, labels map[string]string, start time.Time, step time.Duration, values []float64) {
	id := name + formatLabels(labels)
	for i, v := range values {
		ts := start.Add(time.Duration(i) * step)
		f.lines = append(f.lines, fmt.Sprintf("%s %s %s\n", id, formatFloat(v),
			strconv.FormatFloat(float64(ts.UnixMilli())/1000, 'f', 3, 64)))
	}
}

func formatLabels(labels map[string]string) string {
	if len(labels) == 0 {
		return ""
	}
	names := slices.Sorted(maps.Keys(labels))
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + `="` + labelEscaper.Replace(labels[n]) + `"`
	}
	return "{" + strings.Join(parts, ",") + "}"
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// formatFloat writes NaN and ±Inf as the format spells them.
func formatFloat(v float64) string {
	return strconv.FormatFloat(v, 'g', -1, 64)
}
