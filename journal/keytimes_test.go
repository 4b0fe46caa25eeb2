package journal

import (
	"strings"
	"testing"
	"time"
)

// keyTimes returns the report's key times by name and its durations.
func keyTimes(r *Report) (map[string]KeyTime, []KeyDuration) {
	k := r.KeyTimes()
	got := map[string]KeyTime{}
	for _, kt := range k.Times {
		got[kt.Name] = kt
	}
	return got, k.Durations
}

// everyQuarter are samples 15 s apart from at(0, 0).
func everyQuarter(vals ...float64) []ChartPoint {
	p := make([]ChartPoint, len(vals))
	for i, v := range vals {
		p[i] = ChartPoint{T: t0.Add(time.Duration(i) * 15 * time.Second), V: v}
	}
	return p
}

func TestDetectionIsTheFirstAlertFired(t *testing.T) {
	crit := 1.3
	r := &Report{Opened: at(5, 0), Entries: []Entry{
		{Time: at(5, 0), Event: IncidentOpened},
		{Time: at(3, 10), Event: AlertFired, Reason: "amplification above 1.3 on checkout"},
		{Time: at(4, 0), Event: AlertFired, Reason: "later"},
	}, Charts: []Chart{{ID: "amplification", Title: "Amplification", Alarm: &crit, For: time.Minute,
		Series: []ChartSeries{{Points: everyQuarter(1, 1, 4, 4, 4, 4, 4, 4, 4)}}}}}
	got, _ := keyTimes(r)
	if d := got["detection"]; !d.At.Equal(at(3, 10)) || !strings.Contains(d.Note, "first alert fired: amplification above 1.3") {
		t.Errorf("detection %+v, want the first alert.fired entry", d)
	}
}

func TestDetectionIsTheFirstBreachHeldForItsFor(t *testing.T) {
	crit := 1.3
	// Breached for 30 s at 0:15 (shorter than for: 1m), then from 1:30 on:
	// held for a minute at 2:30. The incident was opened at 0:20, before.
	amp := everyQuarter(1, 4, 4, 1, 1, 1, 4, 4, 4, 4, 4, 4, 4)
	r := &Report{Opened: at(0, 20), Entries: []Entry{{Time: at(0, 20), Event: IncidentOpened}},
		Charts: []Chart{
			{ID: "amplification", Title: "Amplification", Alarm: &crit, For: time.Minute, Series: []ChartSeries{{Points: amp}}},
			{ID: "retry_ratio", Title: "Retry ratio", NoData: "none"},
		}}
	got, durs := keyTimes(r)
	if f := got["fault first seen"]; !f.At.Equal(at(0, 15)) {
		t.Fatalf("fault %+v, want the first sample past the threshold", f)
	}
	if d := got["detection"]; !d.At.Equal(at(2, 30)) || !strings.Contains(d.Note, "held for its for: (1m0s)") {
		t.Errorf("detection %+v, want the breach held a minute (2:30)", d)
	}
	if durs[0].Name != "time to detect" || durs[0].D != 2*time.Minute+15*time.Second {
		t.Errorf("time to detect %+v", durs[0])
	}

	// Without for:, the first breach is its detection.
	r.Charts[0].For = 0
	if got, _ := keyTimes(r); !got["detection"].At.Equal(at(0, 15)) {
		t.Errorf("detection without for: %+v", got["detection"])
	}
}

// TestDetectionNeverBeforeTheFault: an incident opened before the first
// breach is detected at the fault, and the time to detect is 0, never
// negative.
func TestDetectionNeverBeforeTheFault(t *testing.T) {
	ev := []Evidence{{Query: "amplification", Status: "crit", Time: at(1, 15)}}
	r := &Report{Opened: at(0, 0), Entries: []Entry{
		{Time: at(0, 0), Event: IncidentOpened},
		{Time: at(2, 0), Event: ActionApplied, Kind: "retries", Target: "checkout", Value: "off", Actor: "alice", Evidence: ev},
	}}
	got, durs := keyTimes(r)
	if d := got["detection"]; !d.At.Equal(at(1, 15)) || !strings.Contains(d.Note, "counted from the fault") {
		t.Errorf("detection %+v, want the fault's time", d)
	}
	if durs[0].D != 0 || durs[0].Note != "" {
		t.Errorf("time to detect %+v, want 0s", durs[0])
	}
}

func TestDurationsNeverNegative(t *testing.T) {
	ev := []Evidence{{Query: "amplification", Status: "crit", Time: at(3, 0)}}
	// An alert at 4:00; the responder acted at 3:30, before it.
	r := &Report{Entries: []Entry{
		{Time: at(3, 30), Event: ActionApplied, Kind: "retries", Target: "checkout", Value: "off", Actor: "alice", Evidence: ev},
		{Time: at(4, 0), Event: AlertFired, Reason: "amplification"},
	}}
	_, durs := keyTimes(r)
	for _, d := range durs {
		if d.D < 0 {
			t.Errorf("%s is negative: %v", d.Name, d.D)
		}
	}
	if d := durs[1]; d.Name != "time to first action" || d.D != 0 || d.Note != "first action came before detection" {
		t.Errorf("time to first action %+v, want it unknown, saying why", d)
	}
}

func TestChartWindowEndsWhenGenerated(t *testing.T) {
	r := &Report{Entries: []Entry{{Time: at(0, 0), Event: IncidentOpened}, {Time: at(10, 0), Event: IncidentClosed}}}
	_, full := r.ChartWindow()
	if !full.Equal(at(16, 0)) {
		t.Fatalf("window ends %v, want the close plus 5m margin, rounded up", full)
	}
	for _, c := range []struct {
		generated, want time.Time
	}{
		{at(12, 30), at(12, 30)}, // closed 2.5 min ago: ends now
		{at(40, 0), at(16, 0)},   // closed long ago: the whole margin
		{at(9, 0), at(10, 0)},    // a clock behind the record: the record still shows
		{time.Time{}, at(16, 0)}, // not known: the whole margin
	} {
		r.Generated = c.generated
		if from, to := r.ChartWindow(); !to.Equal(c.want) || !from.Equal(at(-5, 0)) {
			t.Errorf("generated %v: window %v to %v, want it to end %v", c.generated, from, to, c.want)
		}
	}
}
