package alertloop

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/stormctl/stormctl/lab/promapi"
)

// blipRule is an alerting rule in the exported rules' shape: a value past
// a threshold for 20 s, labels and annotations templated from the series.
const blipRule = `groups:
  - name: blip
    rules:
      - alert: StormctlRetryRatio
        expr: retry_ratio > 0.3
        for: 20s
        labels: {severity: critical, service: "{{ $labels.service }}"}
        annotations: {stormctl_value: "{{ $value }}"}
`

// TestForWindow: a series past the threshold for less than the rule's
// for: never fires, so nothing is grouped or delivered (no incident, no
// action); one past it for longer fires once its for: has passed, with its
// templates expanded, and resolves when it falls back.
func TestForWindow(t *testing.T) {
	ctx := context.Background()
	db, err := promapi.Open(promapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	epoch := time.Unix(1_700_000_000, 0)
	// 0.5 from 60 s to 75 s (15 s, under for:), and from 120 s to 160 s.
	past := func(s int) bool { return (s >= 60 && s < 75) || (s >= 120 && s < 160) }
	app := db.Appender(ctx)
	ls := labels.FromStrings("__name__", "retry_ratio", "service", "checkout", "dependency", "payments")
	for s := 0; s <= 240; s++ {
		v := 0.1
		if past(s) {
			v = 0.5
		}
		if _, err := app.Append(0, ls, epoch.Add(time.Duration(s)*time.Second).UnixMilli(), v); err != nil {
			t.Fatal(err)
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	rules, err := ParseRules([]byte(blipRule))
	if err != nil {
		t.Fatal(err)
	}
	g := newGrouper(0)
	type change struct {
		at    int
		state string
	}
	var got []change
	var fired *Alert
	for s := 0; s <= 240; s += 5 {
		now := epoch.Add(time.Duration(s) * time.Second)
		changed, err := rules.Eval(ctx, db.Engine, db.Store, now)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range changed {
			got = append(got, change{s, a.State})
			g.add(a, now)
			fired = a
		}
		if msgs := g.due(now, "lab"); len(msgs) > 0 && s < 120 {
			t.Errorf("at %ds a webhook for %s: the 15 s blip is under the rule's for: 20s", s, msgs[0].GroupKey)
		}
	}
	want := []change{{140, Firing}, {160, Inactive}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("state changes %+v, want %+v", got, want)
	}
	if fired.Labels.Get("service") != "checkout" || fired.Labels.Get("alertname") != "StormctlRetryRatio" ||
		fired.Labels.Get("__name__") != "" || fired.Annotations["stormctl_value"] != "0.5" {
		t.Errorf("alert labels %s, annotations %v", fired.Labels, fired.Annotations)
	}
	if !fired.FiredAt.Equal(epoch.Add(140*time.Second)) || !fired.ActiveAt.Equal(epoch.Add(120*time.Second)) {
		t.Errorf("active at %s, fired at %s", fired.ActiveAt, fired.FiredAt)
	}
}
