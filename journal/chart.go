package journal

import (
	"fmt"
	"math"
	"time"
)

// Chart is one signal over the report's window, as Prometheus answered a
// range query for it; NoData says why there is nothing to draw.
type Chart struct {
	ID, Title, Unit string
	Series          []ChartSeries
	Lines           []ChartLine // thresholds, drawn as horizontal lines
	// Alarm is the threshold whose crossing counts as a breach (the
	// query's crit, else warn); Below says low values are the bad ones.
	Alarm *float64
	Below bool
	// For is how long a breach must last before its alert fires (the
	// threshold's for:); the report's detection is the first breach held
	// that long when no alert.fired entry says when.
	For    time.Duration
	NoData string
	// Hidden charts are not drawn: their data only dates a first breach.
	Hidden bool
	Note   string // shown under the chart, e.g. series left out
}

// ChartSeries is one labelled line.
type ChartSeries struct {
	Name   string
	Points []ChartPoint
}

// ChartPoint is one sample; NaN draws a gap.
type ChartPoint struct {
	T time.Time
	V float64
}

// ChartLine is a threshold line, e.g. {"crit", 1.3}.
type ChartLine struct {
	Label string
	Value float64
}

// ChartWindow is the time the charts and the lever lane show: the record's
// span with a margin each side (a fifth of the span, at least 5 minutes),
// so the rise before the first entry and the fall after the last show.
// It ends when the report was generated if the margin would run past it:
// Prometheus has no samples there yet, and would fill them from lookback.
func (r *Report) ChartWindow() (from, to time.Time) {
	from, last := r.Window()
	if from.IsZero() {
		return from, last
	}
	margin := max(5*time.Minute, last.Sub(from)/5).Round(time.Minute)
	from, to = from.Add(-margin).Truncate(time.Minute), last.Add(margin).Truncate(time.Minute).Add(time.Minute)
	if g := r.Generated; !g.IsZero() && g.Before(to) {
		// A lever still held runs to its expiry, past now: the lane shows it.
		to = maxTime(g, last)
	}
	return from, to
}

// ChartStep is the query_range resolution for a window: about 240 points,
// never finer than 15s (a usual scrape interval).
func ChartStep(from, to time.Time) time.Duration {
	return max(15*time.Second, (to.Sub(from) / 240).Round(time.Second))
}

func (c Chart) breached(v float64) bool {
	if c.Alarm == nil || math.IsNaN(v) {
		return false
	}
	if c.Below {
		return v < *c.Alarm
	}
	return v > *c.Alarm
}

// firstBreach is the first sample of any series past the alarm.
func (c Chart) firstBreach() (time.Time, bool) {
	var first time.Time
	for _, s := range c.Series {
		for _, p := range s.Points {
			if c.breached(p.V) && (first.IsZero() || p.T.Before(first)) {
				first = p.T
				break
			}
		}
	}
	return first, !first.IsZero()
}

// heldBreach is when the first breach of any series had lasted c.For:
// when its alert would fire. With no For it is the first breach.
func (c Chart) heldBreach() (time.Time, bool) {
	var held time.Time
	for _, s := range c.Series {
		var start time.Time // of the breach in progress; zero when none
		for _, p := range s.Points {
			if !c.breached(p.V) {
				start = time.Time{}
				continue
			}
			if start.IsZero() {
				start = p.T
			}
			if p.T.Sub(start) >= c.For {
				if held.IsZero() || p.T.Before(held) {
					held = p.T
				}
				break
			}
		}
	}
	return held, !held.IsZero()
}

// cleared is the first sample after the last breach: when the signal came
// back under its threshold for good. Without one, why says why.
func (c Chart) cleared() (at time.Time, why string) {
	var lastBad, lastT time.Time
	for _, s := range c.Series {
		for _, p := range s.Points {
			if c.breached(p.V) && p.T.After(lastBad) {
				lastBad = p.T
			}
			lastT = maxTime(lastT, p.T)
		}
	}
	switch {
	case lastBad.IsZero():
		return at, "it never breached its threshold in the window"
	case !lastT.After(lastBad):
		return at, "it was still past its threshold at the end of the window"
	}
	for _, s := range c.Series {
		for _, p := range s.Points {
			if p.T.After(lastBad) && (at.IsZero() || p.T.Before(at)) {
				at = p.T
			}
		}
	}
	return at, ""
}

// KeyTime is a moment of the incident; Note says how it was found or why
// it is not known.
type KeyTime struct {
	Name string
	At   time.Time // zero when not known
	Note string
}

// KeyDuration is the time between two key times.
type KeyDuration struct {
	Name string
	D    time.Duration
	Note string // why it is not known, when D is 0
}

// KeyTimes are the report's key moments and the durations between them.
type KeyTimes struct {
	Times     []KeyTime
	Durations []KeyDuration
	// Breaches are the first breach of each query asked, drawn or not.
	Breaches []KeyTime
}

// Chart ids the key times read.
const (
	mitigationChart = "amplification"
	recoveryChart   = "edge_error_rate"
)

// KeyTimes derives fault, detection, first action, mitigation and recovery
// from the entries and the charts.
func (r *Report) KeyTimes() KeyTimes {
	var k KeyTimes
	fault := KeyTime{Name: "fault first seen", Note: "no query breached its threshold in the charts or the evidence"}
	for _, c := range r.Charts {
		if c.NoData != "" {
			k.Breaches = append(k.Breaches, KeyTime{Name: c.Title, Note: "no data"})
			continue
		}
		t, ok := c.firstBreach()
		b := KeyTime{Name: c.Title, At: t, Note: "first sample past its threshold"}
		if !ok {
			b.Note = "stayed within its threshold"
		}
		k.Breaches = append(k.Breaches, b)
		if ok && (fault.At.IsZero() || t.Before(fault.At)) {
			fault.At, fault.Note = t, "first breach of "+c.Title
		}
	}
	if fault.At.IsZero() {
		for _, e := range r.Entries {
			for _, ev := range e.Evidence {
				if (ev.Status == "crit" || ev.Status == "warn") && (fault.At.IsZero() || ev.Time.Before(fault.At)) {
					fault.At, fault.Note = ev.Time, fmt.Sprintf("earliest evidence past its threshold (%s, from the journal)", ev.Query)
				}
			}
		}
	}
	detect := r.detection(fault)
	action := KeyTime{Name: "first action", Note: "no lever was applied"}
	for _, e := range r.Entries {
		if e.Event == ActionApplied {
			action.At, action.Note = e.Time, fmt.Sprintf("%s %s on %s by %s", e.Kind, e.Value, e.Target, e.Actor)
			break
		}
	}
	mitigate := r.cleared("mitigation", mitigationChart, "amplification back under its threshold")
	recover := r.cleared("recovery", recoveryChart, "edge error rate back under its threshold")
	k.Times = []KeyTime{fault, detect, action, mitigate, recover}
	k.Durations = []KeyDuration{
		between("time to detect", fault, detect),
		between("time to first action", detect, action),
		between("time to mitigate", fault, mitigate),
		between("time to recover", fault, recover),
	}
	return k
}

// detection is the first alert.fired entry; without one, the first breach
// held for its threshold's for: (when its alert would fire); without that,
// the incident's opening. It is never before the fault: an incident opened
// on a hunch before any breach counts from the breach.
func (r *Report) detection(fault KeyTime) KeyTime {
	d := KeyTime{Name: "detection"}
	for _, e := range r.Entries {
		if e.Event == AlertFired {
			d.At, d.Note = e.Time, "first alert fired: "+firstNonEmpty(e.Reason, e.Target, string(e.Event))
			break
		}
	}
	if d.At.IsZero() {
		for _, c := range r.Charts {
			if c.NoData != "" {
				continue
			}
			if t, ok := c.heldBreach(); ok && (d.At.IsZero() || t.Before(d.At)) {
				d.At, d.Note = t, fmt.Sprintf("first breach of %s held for its for: (%s), when its alert fires", c.Title, c.For)
			}
		}
	}
	if d.At.IsZero() {
		d.At, d.Note = r.Opened, "incident opened (no alert fired, and no breach held for its for: in the charts)"
		if r.Opened.IsZero() {
			d.Note = "no alert fired, no breach held for its for:, and no incident.opened entry in the record"
		}
	}
	if !d.At.IsZero() && !fault.At.IsZero() && d.At.Before(fault.At) {
		d.At, d.Note = fault.At, d.Note+", before the fault was first seen: counted from the fault"
	}
	return d
}

func (r *Report) cleared(name, chartID, meaning string) KeyTime {
	kt := KeyTime{Name: name, Note: "not known: no " + chartID + " chart"}
	for _, c := range r.Charts {
		if c.ID != chartID {
			continue
		}
		if c.NoData != "" {
			kt.Note = "not known: " + chartID + " has no data"
			continue
		}
		if t, why := c.cleared(); why != "" {
			kt.Note = "not known: " + why
		} else {
			kt.At, kt.Note = t, meaning
		}
	}
	return kt
}

func between(name string, a, b KeyTime) KeyDuration {
	switch {
	case a.At.IsZero():
		return KeyDuration{Name: name, Note: a.Name + " not known"}
	case b.At.IsZero():
		return KeyDuration{Name: name, Note: b.Name + " not known"}
	case b.At.Before(a.At):
		return KeyDuration{Name: name, Note: b.Name + " came before " + a.Name}
	}
	return KeyDuration{Name: name, D: b.At.Sub(a.At)}
}
