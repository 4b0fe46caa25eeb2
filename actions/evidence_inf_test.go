package actions

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/queries"
)

// answering is a Prometheus that answers every instant query with one
// series holding value, written as Prometheus writes it ("+Inf", "NaN").
func answering(t *testing.T, value string) *QueryEvidence {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"service":"checkout","dependency":"payments"},"value":[1700000000,%q]}]}}`, value)
	}))
	t.Cleanup(srv.Close)
	client, err := queries.NewClient(config.Prometheus{URL: srv.URL}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cat, err := queries.Load()
	if err != nil {
		t.Fatal(err)
	}
	return &QueryEvidence{Catalog: cat, Runner: queries.NewRunner(client, queries.RunnerOptions{}),
		PackFor: func(string) (string, map[string]string, error) { return queries.DefaultPack, nil, nil }}
}

// TestEvidenceInfinities: +Inf amplification (attempts with no logical
// requests left) is the worst storm, so it supports retries off; -Inf is
// the best value in its direction; NaN is no data, and says so.
func TestEvidenceInfinities(t *testing.T) {
	target := Target{Name: "checkout->payments", Service: "checkout", Dependency: "payments"}
	cases := []struct {
		value, status, text, describe string
		supports                      bool
	}{
		{"+Inf", "crit", "+Inf", "amplification +Inf (crit;", true},
		{"-Inf", "ok", "-Inf", "amplification -Inf (ok;", false},
		{"NaN", StatusNoData, "NaN", "amplification: no data: NaN from the server", false},
		{"4", "crit", "", "amplification 4 (crit;", true},
	}
	for _, c := range cases {
		t.Run(c.value, func(t *testing.T) {
			ev, err := answering(t, c.value).Measure(context.Background(), "amplification", target)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Status != c.status || ev.ValueText != c.text || Supports(ev.Status) != c.supports {
				t.Fatalf("got %+v", ev)
			}
			if d := describe(ev); !strings.HasPrefix(d, c.describe) {
				t.Fatalf("describe: %q, want %q", d, c.describe)
			}
		})
	}
}
