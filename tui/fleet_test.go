package tui

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/queries"
	"github.com/stormctl/stormctl/tui/components/signals"
)

// fleetWorld is a real Prometheus holding services × 3 dependencies of the
// stormctl metric contract up to the harness's t0: three storms on
// payments (4, 3 and 2 attempts per request), four warm ledger calls,
// every other call path calm.
func fleetWorld(t testing.TB, services int) (*queries.Runner, *testenv.Prometheus) {
	t.Helper()
	f := testenv.Fleet{Services: services, End: t0,
		Storm: map[int]float64{17 % services: 4, services / 2: 3, services - 2: 2},
		Warm:  map[int]float64{5 % services: 1.28, 42 % services: 1.25, services * 3 / 10: 1.24, services * 7 / 10: 1.22}}
	p := testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: f.OpenMetrics()})
	c, err := queries.NewClient(config.Prometheus{URL: p.URL}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return queries.NewRunner(c, queries.RunnerOptions{Timeout: 30 * time.Second}), p
}

// until delivers finished commands until cond holds, failing after 90s:
// refreshes against a real server take longer than settle waits.
func (h *harness) until(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("waited 90s for %s; the screen:\n%s", what, h.view())
		}
		if !h.deliverReady() {
			time.Sleep(5 * time.Millisecond)
		}
	}
	h.settle()
}

func rowNames(ps []signals.Panel) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Query + " " + p.Series + " " + string(p.State)
	}
	return out
}

// TestFleetViewAgainstPrometheus opens the dashboard on 1,000 services ×
// 3 dependencies: the first screen has exactly the storming series at the
// top, worst first and grouped by service, the fleet's counts, a constant
// number of requests; enter drills into a service, esc comes back, / filters.
func TestFleetViewAgainstPrometheus(t *testing.T) {
	runner, _ := fleetWorld(t, 1000)
	plan := signals.Plan{Catalog: catalog(t), Top: signals.DefaultTop}
	h := newHarness(t, newClock(), Deps{Querier: runner}, Options{Context: "prod", Signals: plan}, 200, 60)
	h.until("the first refresh", func() bool { return len(h.m.signals.Panels()) > 0 })

	if n, q := len(signals.Requests(h.m.targets, t0)), len(catalog(t).Queries()); n != q {
		t.Errorf("%d requests per refresh, want one per query (%d)", n, q)
	}
	rows := rowNames(h.m.signals.Panels())
	// Within a service, the row further past its threshold first: for
	// svc-0998 a retry ratio of 0.5 is 67% past crit 0.3, amplification 2
	// is 54% past crit 1.3.
	want := []string{
		"amplification svc-0017→payments crit", "retry_ratio svc-0017→payments crit",
		"amplification svc-0500→payments crit", "retry_ratio svc-0500→payments crit",
		"retry_ratio svc-0998→payments crit", "amplification svc-0998→payments crit",
		"retry_ratio svc-0005→ledger warn", "amplification svc-0005→ledger warn",
	}
	if len(rows) < len(want) || strings.Join(rows[:len(want)], "\n") != strings.Join(want, "\n") {
		t.Fatalf("first rows:\n%s\nwant:\n%s", strings.Join(rows[:min(len(rows), 12)], "\n"), strings.Join(want, "\n"))
	}
	// Below them the warm ones that are not storms, and nothing critical.
	for _, r := range rows[len(want):] {
		if strings.HasSuffix(r, " crit") {
			t.Errorf("a critical row below the storms and the warmest: %s", r)
		}
	}
	h.contains("amplification: 3 crit, 4 warn of 3,000 series", "retry_ratio: 3 crit, 1 warn of 3,000 series", "Fleet: worst first")
	t.Logf("first screen:\n%s", h.view())
	// On screen: the three storming services, in order, before any other.
	v := h.view()
	i17, i500, i998, i5 := strings.Index(v, "svc-0017"), strings.Index(v, "svc-0500"), strings.Index(v, "svc-0998"), strings.Index(v, "svc-0005")
	if !(i17 >= 0 && i17 < i500 && i500 < i998 && i998 < i5) {
		t.Errorf("services out of order on screen (17 at %d, 500 at %d, 998 at %d, 5 at %d):\n%s", i17, i500, i998, i5, v)
	}

	// The next refresh asks for one instant per query and appends to the
	// history kept for the rows shown, capped at the sparkline's span.
	if reqs := h.m.requests(t0); reqs[0].Range != nil {
		t.Errorf("refresh after the backfill is a range query")
	}
	h.fire(refreshTickMsg{}, 10*time.Second)
	h.until("the second refresh", func() bool {
		p := h.m.signals.Panels()[0]
		return len(p.Points) > 0 && p.Points[len(p.Points)-1].T.Equal(t0.Add(10*time.Second))
	})
	for _, p := range h.m.signals.Panels() {
		if len(p.Points) > signals.MaxHistory || (p.State == signals.StateCrit && len(p.Points) != signals.MaxHistory) {
			t.Errorf("%s keeps %d points, want %d", p.Key(), len(p.Points), signals.MaxHistory)
		}
	}
	if p := h.m.signals.Panels()[0]; p.Key() != "amplification|svc-0017→payments" || math.Abs(p.Value-4) > 1e-6 {
		t.Errorf("after an instant refresh the first row is %s %v", p.Key(), p.Value)
	}

	// Drill into the second service: every series of it, by service.
	h.key("down", "down")
	if p, _ := h.m.signals.Selected(); p.Service != "svc-0500" {
		t.Fatalf("selected %s after two downs, want svc-0500", p.Series)
	}
	h.key("enter")
	h.until("the drilled refresh", func() bool { return len(h.m.signals.Panels()) > 0 })
	if h.m.signals.Fleet() {
		t.Fatal("still the fleet view after enter")
	}
	amp := 0
	for _, p := range h.m.signals.Panels() {
		if p.Service != "svc-0500" && p.Series != "-" {
			t.Errorf("drilled into svc-0500, got %s", p.Series)
		}
		if p.Query == "amplification" {
			amp++
		}
	}
	if amp != 3 {
		t.Errorf("%d amplification panels for svc-0500, want its 3 dependencies", amp)
	}
	h.contains("Signals: svc-0500 (esc: back to the fleet)")

	h.key("esc")
	h.until("the fleet again", func() bool { return h.m.signals.Fleet() && len(h.m.signals.Panels()) > 0 })
	if got := rowNames(h.m.signals.Panels()); got[0] != want[0] {
		t.Errorf("back in the fleet, first row %s", got[0])
	}

	// g: the same rows under their dependency; the storms are all on payments.
	h.key("g")
	byDep := rowNames(h.m.signals.Panels())
	if strings.Join(byDep[:3], ",") != "amplification svc-0017→payments crit,retry_ratio svc-0017→payments crit,amplification svc-0500→payments crit" {
		t.Errorf("grouped by dependency: %v", byDep[:6])
	}
	h.contains("→payments")
	h.key("g")

	h.key("/")
	h.typeText("svc-099")
	h.key("enter")
	for _, p := range h.m.signals.Panels() {
		if !strings.Contains(p.Service, "svc-099") {
			t.Errorf("filter svc-099 shows %s", p.Series)
		}
	}
	if got := rowNames(h.m.signals.Panels()); len(got) == 0 || got[0] != "retry_ratio svc-0998→payments crit" {
		t.Errorf("filtered rows %v", got)
	}
	h.contains("amplification: 3 crit, 4 warn of 3,000 series") // the counts stay the fleet's

	// A calm service the worst rows do not show: typed in full, enter opens it.
	h.key("/", "backspace", "backspace", "backspace", "backspace", "backspace", "backspace", "backspace")
	h.typeText("svc-0123")
	h.key("enter")
	h.until("svc-0123", func() bool { return !h.m.signals.Fleet() && len(h.m.signals.Panels()) > 0 })
	for _, p := range h.m.signals.Panels() {
		if p.Query == "amplification" && (p.Service != "svc-0123" || p.State != signals.StateOK) {
			t.Errorf("svc-0123: %s %s", p.Series, p.State)
		}
	}
	h.contains("Signals: svc-0123")
}
