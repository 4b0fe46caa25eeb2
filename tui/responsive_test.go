package tui

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/queries"
	"github.com/stormctl/stormctl/tui/components/signals"
)

// amplificationData is 20 minutes of a storm on checkout→payment-gateway
// in the stormctl metric contract: 100 requests/s, 3 attempts each.
func amplificationData(now time.Time) string {
	om := testenv.NewOpenMetrics()
	labels := map[string]string{"service": "checkout", "dependency": "payment-gateway"}
	start, step := now.Add(-20*time.Minute), 15*time.Second
	var reqs, atts []float64
	for i := 0; i <= 80; i++ {
		reqs = append(reqs, float64(i)*100*15)
		atts = append(atts, float64(i)*300*15)
	}
	om.Counter("stormctl_requests_total", labels, start, step, reqs)
	om.Counter("stormctl_attempts_total", map[string]string{"service": "checkout", "dependency": "payment-gateway", "outcome": "timeout"}, start, step, atts)
	return om.String()
}

// TestKeysNeverWaitOnPrometheus: with a Prometheus that answers after 5 s,
// keys are handled and drawn at once while the refresh is in flight, and
// the panels fill in when the answers come.
func TestKeysNeverWaitOnPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts prometheus")
	}
	prom := testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: amplificationData(time.Now())})
	target, _ := url.Parse(prom.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(slow.Close)
	client, err := queries.NewClient(config.Prometheus{URL: slow.URL}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	runner := queries.NewRunner(client, queries.RunnerOptions{Timeout: 20 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	m := New(ctx, Deps{Querier: runner}, Options{Actor: "alice", Signals: signals.Plan{Catalog: catalog(t), Queries: []string{"amplification", "retry_ratio"}}})
	begin := time.Now() // the first refresh starts now and answers after 5 s
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 40))
	waitScreen(t, tm, "waiting for data")

	start := time.Now()
	tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("?")})
	waitScreen(t, tm, "Any key closes this help")
	if took := time.Since(start); took > time.Second {
		t.Fatalf("the help took %s to open while Prometheus was slow", took)
	}
	tm.Send(tea.KeyMsg{Type: tea.KeyEsc})
	start = time.Now()
	tm.Send(tea.KeyMsg{Type: tea.KeyTab})
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("┏━ Levers")) },
		teatest.WithDuration(time.Second), teatest.WithCheckInterval(5*time.Millisecond))
	if took := time.Since(start); took > time.Second {
		t.Fatalf("focus took %s to move while Prometheus was slow", took)
	}
	if time.Since(begin) >= 5*time.Second {
		t.Fatal("the keys were checked after the refresh could have answered: the test proves nothing")
	}
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("3.00 → CRIT")) },
		teatest.WithDuration(15*time.Second), teatest.WithCheckInterval(50*time.Millisecond))
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	fm := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*Model)
	if fm.Focus() != FocusLevers {
		t.Fatalf("focus %s", fm.Focus())
	}
}
