package resilience

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stormctl/stormctl/flags"
)

func TestShedRejectsTheLeverShare(t *testing.T) {
	for _, pct := range []int{0, 1, 30, 75, 100} {
		of, _ := newFlags(t, levers{flags.ShedPercent: {"checkout": pct}})
		reg := prometheus.NewRegistry()
		m, err := NewMetrics(reg)
		if err != nil {
			t.Fatal(err)
		}
		served := 0
		h := Shed(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			served++
			w.WriteHeader(http.StatusAccepted)
		}), ShedConfig{Service: "checkout", Flags: of, Rand: SeededRand(uint64(pct)), Metrics: m})
		const requests = 10000
		shed := 0
		for range requests {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/orders", nil))
			switch rec.Code {
			case http.StatusServiceUnavailable:
				shed++
				if rec.Header().Get("Retry-After") != "1" || rec.Header().Get(ShedHeader) == "" {
					t.Fatalf("shed response headers %v", rec.Header())
				}
			case http.StatusAccepted:
			default:
				t.Fatalf("status %d", rec.Code)
			}
		}
		if share := float64(shed) / requests * 100; math.Abs(share-float64(pct)) > 2 {
			t.Errorf("lever %d%%: shed %.2f%%", pct, share)
		}
		if served+shed != requests {
			t.Errorf("lever %d%%: %d served + %d shed != %d", pct, served, shed, requests)
		}
		want := fmt.Sprintf(`
# HELP stormctl_server_requests_total Requests served at ingress, by status code (shed requests are 503).
# TYPE stormctl_server_requests_total counter
stormctl_server_requests_total{code="202",service="checkout"} %d
stormctl_server_requests_total{code="503",service="checkout"} %d
`, served, shed)
		want = strings.Replace(want, "stormctl_server_requests_total{code=\"202\",service=\"checkout\"} 0\n", "", 1)
		want = strings.Replace(want, "stormctl_server_requests_total{code=\"503\",service=\"checkout\"} 0\n", "", 1)
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "stormctl_server_requests_total"); err != nil {
			t.Errorf("lever %d%%: %v", pct, err)
		}
	}
}

// TestShedIsMeteredAsShedByTheCaller: a caller's attempts rejected by Shed
// count as outcome "shed", and its Retry-After is honoured.
func TestShedIsMeteredAsShedByTheCaller(t *testing.T) {
	of, provider := newFlags(t, levers{flags.ShedPercent: {"payments": 100}})
	srv := httptest.NewServer(Shed(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}), ShedConfig{Service: "payments", Flags: of}))
	defer srv.Close()
	reg := prometheus.NewRegistry()
	m, _ := NewMetrics(reg)
	clock := newFakeClock()
	start := clock.Now()
	c := client(t, newRetrier(t, Config{Metrics: m, Clock: clock.Now, Sleep: clock.Sleep}))
	resp, err := get(t, c, srv.URL)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("%v %v", resp, err)
	}
	if got := testutil.ToFloat64(m.Attempts.WithLabelValues("checkout", "payments", OutcomeShed)); got != 3 {
		t.Errorf("%v attempts metered as shed, want 3", got)
	}
	if slept := clock.Now().Sub(start); slept < 2e9 {
		t.Errorf("slept %v over two retries with Retry-After 1s", slept)
	}
	provider.UpdateFlags(levers{}.flags())
	if resp, err := get(t, c, srv.URL); err != nil || resp.StatusCode != 200 {
		t.Fatalf("lever released: %v %v", resp, err)
	}
}

func TestShedKeepsFlusher(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, _ := NewMetrics(reg)
	h := Shed(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if _, ok := w.(http.Flusher); !ok {
			t.Error("handler lost http.Flusher")
		}
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusTeapot)
	}), ShedConfig{Service: "checkout", Metrics: m})
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	if got := testutil.ToFloat64(m.ServerRequests.WithLabelValues("checkout", "418")); got != 1 {
		t.Errorf("418 counted %v times", got)
	}
}
