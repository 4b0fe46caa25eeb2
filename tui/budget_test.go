package tui

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/queries"
	"github.com/stormctl/stormctl/tui/components/signals"
)

// hostileProm answers every query with 10⁶ series, each carrying a label
// value of valueBytes, generated as it is sent (never held whole by the
// test), until the client stops reading.
func hostileProm(t *testing.T, valueBytes int) *httptest.Server {
	huge := strings.Repeat("x", valueBytes)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if _, err := w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[`)); err != nil {
			return
		}
		for i := range 1_000_000 {
			sep := ","
			if i == 0 {
				sep = ""
			}
			elem := sep + `{"metric":{"__name__":"stormctl_requests_total","service":"svc-` + strconv.Itoa(i) +
				`","dependency":"payments","pod":"` + huge + `"},"value":[1700000000,"3"]}`
			if _, err := w.Write([]byte(elem)); err != nil {
				return
			}
		}
		_, _ = w.Write([]byte(`]}}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestDashboardBudgetAgainstHostilePrometheus: two refreshes of the fleet view
// against a server answering every query with 10⁶ series and 256 KiB label
// values stay within a fixed heap — the answers in flight share the
// dashboard's budget — and the screen says which answers were cut, at
// what, and what to do.
func TestDashboardBudgetAgainstHostilePrometheus(t *testing.T) {
	srv := hostileProm(t, 256<<10)
	c, err := queries.NewClient(config.Prometheus{URL: srv.URL}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	c.SetBudget(queries.NewBudget(queries.DefaultDashBudget))
	runner := queries.NewRunner(c, queries.RunnerOptions{Timeout: 60 * time.Second})
	plan := signals.Plan{Catalog: catalog(t), Top: signals.DefaultTop}
	var h *harness
	peak, cpu := testenv.PeakHeap(t, func() {
		h = newHarness(t, newClock(), Deps{Querier: runner}, Options{Context: "prod", Signals: plan}, 200, 60)
		h.until("the first refresh", func() bool { return !h.m.refreshing && !h.m.header.Refreshed.IsZero() })
		h.key("ctrl+r") // a second refresh while the first's results are held
		h.until("the second refresh", func() bool { return !h.m.refreshing })
	})
	t.Logf("2 fleet refreshes, 10^6 series of 256 KiB labels per answer: peak heap %d MB, %v CPU", peak>>20, cpu.Round(time.Millisecond))
	h.contains("✂ answers cut at the 32 MiB shared by the answers in flight (this process's memory budget)",
		"than kept for ", "use --service, --top or a narrower selector")
	checkSize(t, h.view(), 200, 60)
	if peak > 256<<20 {
		t.Fatalf("peak heap %d MB, want ≤ 256 MB", peak>>20)
	}
}
