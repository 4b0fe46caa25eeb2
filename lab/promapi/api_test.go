package promapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
)

// startAPI opens a DB holding a counter that rises by 2/s for 10 minutes up
// to now (one sample every 15s) for two services, and serves it.
func startAPI(t *testing.T) (v1.API, *Server, time.Time) {
	t.Helper()
	db, err := Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	now := time.Now().Truncate(time.Second)
	start := now.Add(-10 * time.Minute)
	app := db.Appender(context.Background())
	for _, svc := range []string{"checkout", "ledger"} {
		ls := labels.FromStrings("__name__", "stormctl_requests_total", "service", svc, "dependency", "inventory")
		for i := 0; i <= 40; i++ {
			ts := start.Add(time.Duration(i) * 15 * time.Second)
			if _, err := app.Append(0, ls, ts.UnixMilli(), float64(i*30)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	srv, err := Serve("127.0.0.1:0", Mux(db.Handler(), nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c, err := api.NewClient(api.Config{Address: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return v1.NewAPI(c), srv, now
}

func TestClientGolangAPI(t *testing.T) {
	p, _, now := startAPI(t)
	ctx := context.Background()

	val, _, _, err := p.Query(ctx, `sum by (service) (rate(stormctl_requests_total[1m]))`, now)
	if err != nil {
		t.Fatal(err)
	}
	vec, ok := val.(model.Vector)
	if !ok || len(vec) != 2 {
		t.Fatalf("query: got %#v", val)
	}
	for _, s := range vec {
		if math.Abs(float64(s.Value)-2) > 1e-9 {
			t.Errorf("rate for %s = %v, want 2", s.Metric["service"], s.Value)
		}
	}

	rng := v1.Range{Start: now.Add(-5 * time.Minute), End: now, Step: time.Minute}
	val, _, _, err = p.QueryRange(ctx, `stormctl_requests_total{service="checkout"}`, rng)
	if err != nil {
		t.Fatal(err)
	}
	mat := val.(model.Matrix)
	if len(mat) != 1 || len(mat[0].Values) != 6 {
		t.Fatalf("query_range: got %v", mat)
	}
	if got := float64(mat[0].Values[5].Value); got != 1200 {
		t.Errorf("last point = %v, want 1200", got)
	}
	if got := float64(mat[0].Values[0].Value); got != 600 {
		t.Errorf("first point = %v, want 600", got)
	}

	series, _, _, err := p.Series(ctx, []string{`stormctl_requests_total`}, now.Add(-time.Hour), now)
	if err != nil || len(series) != 2 {
		t.Fatalf("series: %v %v", series, err)
	}
	names, _, _, err := p.LabelNames(ctx, nil, now.Add(-time.Hour), now)
	if err != nil || len(names) != 3 || strings.Join([]string{string(names[0]), string(names[1]), string(names[2])}, ",") != "__name__,dependency,service" {
		t.Fatalf("labels: %v %v", names, err)
	}
	values, _, _, err := p.LabelValues(ctx, "service", nil, now.Add(-time.Hour), now)
	if err != nil || len(values) != 2 || values[0] != "checkout" || values[1] != "ledger" {
		t.Fatalf("label values: %v %v", values, err)
	}
	bi, err := p.Buildinfo(ctx)
	if err != nil || bi.Version != Version.Version {
		t.Fatalf("buildinfo: %+v %v", bi, err)
	}

	_, _, _, err = p.Query(ctx, `sum(rate(stormctl_requests_total[1m]`, now)
	var perr *v1.Error
	if !errors.As(err, &perr) || perr.Type != v1.ErrBadData {
		t.Fatalf("bad PromQL: got %v, want bad_data", err)
	}
}

func TestWireFormat(t *testing.T) {
	_, srv, now := startAPI(t)
	form := url.Values{"query": {`stormctl_requests_total{service="ledger"}`}, "time": {formatTime(now)}}

	resp, err := http.PostForm(srv.URL+"/api/v1/query", form)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"stormctl_requests_total","dependency":"inventory","service":"ledger"},"value":[` + formatTime(now) + `,"1200"]}]}}`
	if resp.StatusCode != 200 || string(body) != want {
		t.Fatalf("POST /query: %d %s\nwant %s", resp.StatusCode, body, want)
	}

	resp, err = http.Get(srv.URL + "/api/v1/query?query=" + url.QueryEscape("rate(x[5m]"))
	if err != nil {
		t.Fatal(err)
	}
	var e struct{ Status, ErrorType, Error string }
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || e.Status != "error" || e.ErrorType != "bad_data" || e.Error == "" {
		t.Fatalf("bad query: %d %+v", resp.StatusCode, e)
	}

	for _, path := range []string{"/api/v1/targets", "/api/v1/query_exemplars", "/api/v1/status/runtimeinfo"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d, want 404 (not wired in the lab)", path, resp.StatusCode)
		}
	}
}

func TestServeRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "10.0.0.1:9090", "example.com:80"} {
		if s, err := Serve(addr, http.NotFoundHandler()); err == nil {
			s.Close()
			t.Errorf("Serve(%q) accepted a non-loopback address", addr)
		}
	}
}

func formatTime(t time.Time) string {
	return model.TimeFromUnixNano(t.UnixNano()).String()
}
