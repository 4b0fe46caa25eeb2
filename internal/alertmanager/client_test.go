package alertmanager

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/yamlfile"
)

// alertJSON is one gettableAlert as Alertmanager serves it: the schema of
// api/v2/openapi.yaml (prometheus/alertmanager at
// 8046cfbdc43b1be2895811d31fedbdd325384266), field order as Debian's
// 0.25.0 binary writes it.
func alertJSON(i int, state string) string {
	return fmt.Sprintf(`{"annotations":{},"endsAt":"2026-12-02T15:00:00.000Z","fingerprint":"%016x","receivers":[{"name":"none"}],`+
		`"startsAt":"2026-12-02T14:%02d:00.000Z","status":{"inhibitedBy":[],"silencedBy":[],"state":"%s"},"updatedAt":"2026-12-02T14:00:00.000Z",`+
		`"labels":{"alertname":"A%d","service":"svc"}}`, i, i%60, state, i)
}

// A hostile or broken Alertmanager costs a bounded answer: 10,000 alerts
// keep the newest active ones up to the count, saying how many more; a
// body past the byte cap is refused naming the cap; an error status says so.
func TestAlertsBounded(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/many/api/v2/alerts", func(w http.ResponseWriter, _ *http.Request) {
		parts := make([]string, 10_000)
		for i := range parts {
			parts[i] = alertJSON(i, map[bool]string{true: "suppressed", false: "active"}[i%2 == 0])
		}
		fmt.Fprint(w, "["+strings.Join(parts, ",")+"]")
	})
	mux.HandleFunc("/huge/api/v2/alerts", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `[{"labels":{"alertname":"`+strings.Repeat("x", 10<<20)+`"}}]`)
	})
	mux.HandleFunc("/down/api/v2/alerts", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := context.Background()

	ans, err := (&Client{URL: srv.URL + "/many"}).Alerts(ctx)
	if err != nil || len(ans.Alerts) != DefaultMaxAlerts || ans.More != 10_000-DefaultMaxAlerts {
		t.Fatalf("10,000 alerts: %d kept, %d more, %v", len(ans.Alerts), ans.More, err)
	}
	for _, a := range ans.Alerts {
		if a.Status.State != "active" {
			t.Fatalf("a suppressed alert was kept before active ones: %+v", a)
		}
	}
	if _, err := (&Client{URL: srv.URL + "/huge"}).Alerts(ctx); !yamlfile.IsLimit(err) || !strings.Contains(err.Error(), "4 MiB") {
		t.Fatalf("10 MiB answer: %v", err)
	}
	if _, err := (&Client{URL: srv.URL + "/down"}).Alerts(ctx); err == nil || !strings.Contains(err.Error(), "HTTP 503") {
		t.Fatalf("503: %v", err)
	}
	if got := (&Client{URL: "http://u:secret@127.0.0.1:9093"}).Addr(); strings.Contains(got, "secret") {
		t.Fatalf("Addr shows the password: %s", got)
	}
}
