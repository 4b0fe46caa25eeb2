package queries

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkRefreshStorm: viewers refresh the same panels at the same moment
// against a server that takes 2ms a query. The baseline queries the client
// directly; the runner shares each in-flight query. Reported: requests the
// server saw per refresh round, each way, and their ratio.
func BenchmarkRefreshStorm(b *testing.B) {
	const viewers, panels = 8, 10
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		time.Sleep(2 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"success","data":{"resultType":"scalar","result":[1,"1"]}}`))
	}))
	defer srv.Close()
	r := newRunner(b, srv.URL, RunnerOptions{Concurrency: panels})
	reqs := make([]Request, panels)
	for i := range reqs {
		reqs[i] = Request{Key: fmt.Sprint(i), Expr: fmt.Sprint(i)}
	}
	round := func(view func()) int64 {
		before := requests.Load()
		var wg sync.WaitGroup
		for range viewers {
			wg.Go(view)
		}
		wg.Wait()
		return requests.Load() - before
	}
	var direct, shared int64
	ctx := context.Background()
	for b.Loop() {
		direct += round(func() {
			for _, q := range reqs {
				if _, _, _, err := r.c.Query(ctx, q.Expr, time.Time{}); err != nil {
					b.Error(err)
				}
			}
		})
		shared += round(func() { r.RunAll(ctx, reqs) })
	}
	b.ReportMetric(float64(direct)/float64(b.N), "direct-requests/round")
	b.ReportMetric(float64(shared)/float64(b.N), "runner-requests/round")
	b.ReportMetric(float64(shared)/float64(direct), "runner/direct")
}
