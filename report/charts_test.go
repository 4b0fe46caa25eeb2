package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/queries"
)

func TestReportScopes(t *testing.T) {
	entries := []journal.Entry{
		{Kind: "retries", Target: "checkout->payments"}, {Kind: "breaker", Target: "payments"},
		{Kind: "shed", Target: "checkout"}, {Kind: "retries", Target: "checkout->payments"},
		{Kind: "autoscaling", Target: "ledger"}, {Event: journal.Note},
	}
	edges, services := scopes(entries)
	want := []scope{{"checkout", "payments"}, {"", "payments"}, {"checkout", ""}, {"ledger", ""}}
	if !slices.Equal(edges, want) || !slices.Equal(services, []scope{{service: "checkout"}, {service: "ledger"}}) {
		t.Errorf("edges %v, services %v", edges, services)
	}
	if e, s := scopes(nil); len(e) != 1 || len(s) != 1 || e[0] != (scope{}) {
		t.Errorf("no targets: chart every service: %v %v", e, s)
	}
}

func TestAddSeriesBounded(t *testing.T) {
	var c journal.Chart
	omitted := map[string]bool{}
	for i := range maxChartSeries + 3 {
		s := queries.Series{Labels: map[string]string{"service": fmt.Sprint("svc-", i)}, Points: []queries.Point{{V: math.Inf(1)}}}
		addSeries(&c, s, omitted)
		addSeries(&c, s, omitted) // the same series from another scope
	}
	if len(c.Series) != maxChartSeries || len(omitted) != 3 || !strings.HasPrefix(c.Note, "3 more series not drawn") {
		t.Errorf("%d series, %d omitted, note %q", len(c.Series), len(omitted), c.Note)
	}
	if !math.IsNaN(c.Series[0].Points[0].V) {
		t.Error("an infinite sample must draw a gap")
	}
}
