package promapi

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
)

func TestStoreOrderAndWindow(t *testing.T) {
	s := NewStore(10_000)
	ls := labels.FromStrings("__name__", "stormctl_replicas", "service", "checkout")
	app := s.Appender(context.Background())
	for _, ts := range []int64{1000, 3000, 2000} { // 2000 arrives late, inside the window
		if _, err := app.Append(0, ls, ts, float64(ts)); err != nil {
			t.Fatal(err)
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		t    int64
		v    float64
		want error
	}{
		{2000, 2000, nil}, // the same sample again
		{2000, 7, storage.ErrDuplicateSampleForTimestamp},
		{-20_000, 1, storage.ErrTooOldSample},
	} {
		app := s.Appender(context.Background())
		app.Append(0, ls, c.t, c.v)
		if err := app.Commit(); !errors.Is(err, c.want) {
			t.Errorf("sample at %d = %v: got %v, want %v", c.t, c.v, err, c.want)
		}
	}
	q, _ := s.Querier(1500, 5000)
	set := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchEqual, "service", "checkout"))
	if !set.Next() {
		t.Fatal("no series")
	}
	var got []int64
	it := set.At().Iterator(nil)
	for it.Next() != 0 {
		ts, v := it.At()
		if float64(ts) != v {
			t.Errorf("sample %d holds %v", ts, v)
		}
		got = append(got, ts)
	}
	if len(got) != 2 || got[0] != 2000 || got[1] != 3000 {
		t.Errorf("samples in [1500, 5000]: %v, want [2000 3000]", got)
	}
	if s.MaxTime() != 3000 {
		t.Errorf("MaxTime = %d", s.MaxTime())
	}
}

// A query reading while the sampler appends (in and out of order) sees each
// series as it was when selected: run with -race.
func TestStoreReadsWhileAppending(t *testing.T) {
	db, err := Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ls := labels.FromStrings("__name__", "stormctl_requests_total", "service", "checkout")
	base := time.Now().Add(-time.Hour).UnixMilli()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 2000 {
			app := db.Appender(context.Background())
			ts := base + int64(i)*1000
			if i%10 == 9 {
				ts -= 5500 // late by five and a half intervals
			}
			app.Append(0, ls, ts, float64(i))
			app.Commit()
		}
	}()
	for range 50 {
		if _, _, err := db.Query(context.Background(), `sum(rate(stormctl_requests_total[1m]))`, time.UnixMilli(base+1_000_000)); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	app := db.Appender(context.Background())
	app.Append(0, ls, base+3_000_000, math.Float64frombits(value.StaleNaN))
	app.Commit()
	v, _, err := db.Query(context.Background(), `stormctl_requests_total`, time.UnixMilli(base+3_000_001))
	if err != nil || v.String() != "" {
		t.Errorf("after a staleness marker: %q %v, want an empty vector", v, err)
	}
}

// Parameter errors answer as Prometheus does: bad_data, HTTP 400, its text.
func TestAPIRefusesAsPrometheus(t *testing.T) {
	_, srv, _ := startAPI(t)
	for _, c := range []struct{ path, want string }{
		{"/api/v1/query_range?query=up&start=0&end=100000&step=1", "exceeded maximum resolution of 11,000 points per timeseries"},
		{"/api/v1/query_range?query=up&start=10&end=0&step=1", `invalid parameter \"end\": end timestamp must not be before start time`},
		{"/api/v1/query_range?query=up&start=0&end=10&step=0", "zero or negative query resolution step widths are not accepted"},
		{"/api/v1/query?query=up&time=yesterday", `invalid parameter \"time\": invalid time value for 'time': cannot parse \"yesterday\" to a valid timestamp`},
		{"/api/v1/query?query=up&timeout=-1s", `invalid parameter \"timeout\"`},
		{"/api/v1/series", "no match[] parameter provided"},
		{"/api/v1/series?match[]=" + url.QueryEscape(`{service=~".*"}`), "match[] must contain at least one non-empty matcher"},
		{"/api/v1/labels?limit=-1", "limit must be non-negative"},
	} {
		resp, err := http.Get(srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"errorType":"bad_data"`) || !strings.Contains(string(body), c.want) {
			t.Errorf("%s: %d %s\nwant 400 bad_data with %s", c.path, resp.StatusCode, body, c.want)
		}
	}
	resp, err := http.Get(srv.URL + "/api/v1/series?limit=1&match[]=stormctl_requests_total")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"warnings":["results truncated due to limit"]`) || strings.Count(string(body), "__name__") != 1 {
		t.Errorf("series limit=1: %s", body)
	}
}
