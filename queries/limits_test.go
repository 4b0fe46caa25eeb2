package queries

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
)

// stream is an answer generated as it is sent, never held whole: head,
// then n copies of elem (joined by sep), then end. A hostile server's
// answer can be far larger than the memory the test may use.
type stream struct {
	head, elem, sep, end string
	n                    int
	fill                 byte  // when > 0, elem is this byte repeated fillN times
	fillN                int64 // (a huge label value)
}

func (s stream) serve(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	buf := make([]byte, 0, 64<<10)
	flush := func(force bool) bool {
		if len(buf) < 32<<10 && !force {
			return true
		}
		_, err := w.Write(buf)
		buf = buf[:0]
		return err == nil
	}
	buf = append(buf, s.head...)
	if s.fill != 0 {
		for left := s.fillN; left > 0; left-- {
			buf = append(buf, s.fill)
			if !flush(false) {
				return
			}
		}
	}
	for i := range s.n {
		if i > 0 {
			buf = append(buf, s.sep...)
		}
		buf = append(buf, s.elem...)
		if !flush(false) {
			return
		}
	}
	buf = append(buf, s.end...)
	flush(true)
}

const (
	vectorHead = `{"status":"success","data":{"resultType":"vector","result":[`
	vectorElem = `{"metric":{"__name__":"stormctl_requests_total","service":"checkout","dependency":"payments"},"value":[1700000000,"1"]}`
	vectorEnd  = `]}}`
)

func limitedClient(t *testing.T, url string, l config.PrometheusLimits) *Client {
	t.Helper()
	c, err := NewClient(config.Prometheus{URL: url, Limits: l}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestLimitSeriesMillion: a server answering 10⁶ series gives the first
// max-series of them and a warning that names the address, the limit and
// what to do, without the rest being read.
func TestLimitSeriesMillion(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(stream{head: vectorHead, elem: vectorElem, sep: ",", end: vectorEnd, n: 1_000_000}.serve))
	defer srv.Close()
	c := limitedClient(t, srv.URL, config.PrometheusLimits{})
	var (
		v     model.Value
		warns []string
		err   error
	)
	peak, took := testenv.PeakHeap(t, func() { v, warns, _, err = c.Query(context.Background(), "x", time.Time{}) })
	if err != nil {
		t.Fatal(err)
	}
	if n := len(v.(model.Vector)); n != DefaultMaxSeries {
		t.Fatalf("%d series, want %d", n, DefaultMaxSeries)
	}
	if len(warns) != 1 || !strings.HasPrefix(warns[0], CutPrefix) || !strings.Contains(warns[0], srv.URL) ||
		!strings.Contains(warns[0], "prometheus.limits.max-series") || !strings.Contains(warns[0], "--top") {
		t.Fatalf("warnings = %q", warns)
	}
	t.Logf("10^6 series: peak heap %d MB, %v CPU", peak>>20, took)
	if peak > 64<<20 || took > 3*time.Second {
		t.Fatalf("peak heap %d MB, %v CPU: want ≤ 64 MB and ≤ 3s", peak>>20, took)
	}
}

// TestLimitHugeLabelValue: one 300 MB label value fails at max-bytes with
// an error naming the limit, after reading no more than it.
func TestLimitHugeLabelValue(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(stream{
		head: vectorHead + `{"metric":{"service":"`, fill: 'a', fillN: 300 << 20,
		end: `"},"value":[1,"1"]}` + vectorEnd}.serve))
	defer srv.Close()
	c := limitedClient(t, srv.URL, config.PrometheusLimits{})
	var err error
	peak, took := testenv.PeakHeap(t, func() { _, _, _, err = c.Query(context.Background(), "x", time.Time{}) })
	var le *LimitError
	var se *ServerError
	if !errors.As(err, &le) || !errors.As(err, &se) || le.Limit != "max-bytes" || le.Kept != 0 {
		t.Fatalf("err = %v, want a *LimitError at max-bytes in a *ServerError", err)
	}
	for _, want := range []string{srv.URL, "16 MiB", "prometheus.limits.max-bytes", "--top or a narrower selector"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("%q does not say %q", err, want)
		}
	}
	t.Logf("300 MB label value: peak heap %d MB, %v CPU", peak>>20, took)
	if peak > 100<<20 || took > 3*time.Second {
		t.Fatalf("peak heap %d MB, %v CPU: want ≤ 100 MB and ≤ 3s", peak>>20, took)
	}
}

// TestLimitBytesCutsAtSeries: past max-bytes inside the list, the series
// read whole are kept and the answer says it was cut.
func TestLimitBytesCutsAtSeries(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(stream{head: vectorHead, elem: vectorElem, sep: ",", end: vectorEnd, n: 100}.serve))
	defer srv.Close()
	c := limitedClient(t, srv.URL, config.PrometheusLimits{MaxBytes: int64(len(vectorHead) + 10*len(vectorElem) + 20)})
	v, warns, _, err := c.Query(context.Background(), "x", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(v.(model.Vector)); n != 10 {
		t.Fatalf("%d series, want 10", n)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "prometheus.limits.max-bytes") || !strings.Contains(warns[0], "first 10 series") {
		t.Fatalf("warnings = %q", warns)
	}
}

// TestLimitLabelValues: label values and series lists are cut the same way,
// and one huge value among them costs no more than max-bytes.
func TestLimitLabelValues(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/label/service/values", stream{head: `{"status":"success","data":[`, elem: `"checkout-0001"`, sep: ",", end: `]}`, n: 1_000_000}.serve)
	mux.HandleFunc("/api/v1/label/huge/values", stream{head: `{"status":"success","data":["checkout","payments","`, fill: 'b', fillN: 300 << 20, end: `"]}`}.serve)
	mux.HandleFunc("/api/v1/series", stream{head: `{"status":"success","data":[`, elem: `{"__name__":"up","job":"checkout"}`, sep: ",", end: `]}`, n: 1_000_000}.serve)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := limitedClient(t, srv.URL, config.PrometheusLimits{MaxSeries: 50})
	ctx := context.Background()

	vs, warns, _, err := c.API.LabelValues(ctx, "service", nil, time.Time{}, time.Time{})
	if err != nil || len(vs) != 50 || len(warns) != 1 || !strings.Contains(warns[0], "50 series") {
		t.Fatalf("label values: %d, %q, %v", len(vs), warns, err)
	}
	ss, warns, _, err := c.API.Series(ctx, []string{"up"}, time.Time{}, time.Time{})
	if err != nil || len(ss) != 50 || len(warns) != 1 {
		t.Fatalf("series: %d, %q, %v", len(ss), warns, err)
	}
	peak, _ := testenv.PeakHeap(t, func() { vs, warns, _, err = c.API.LabelValues(ctx, "huge", nil, time.Time{}, time.Time{}) })
	if err != nil || len(vs) != 2 || len(warns) != 1 || !strings.Contains(warns[0], "max-bytes") {
		t.Fatalf("huge label value: %d, %q, %v", len(vs), warns, err)
	}
	if peak > 100<<20 {
		t.Fatalf("a 300 MB label value cost %d MB", peak>>20)
	}
}

// TestLimitHostileShapes: answers a cut cannot describe honestly fail.
func TestLimitHostileShapes(t *testing.T) {
	for name, s := range map[string]stream{
		// resultType after the list: a cut answer would have no type.
		"type after result": {head: `{"status":"success","data":{"result":[`, elem: vectorElem, sep: ",", end: `],"resultType":"vector"}}`, n: 100},
		// the cap reached outside the list
		"huge status": {head: `{"status":"`, fill: 's', fillN: 1 << 20, end: `","data":{"resultType":"vector","result":[]}}`},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(s.serve))
			defer srv.Close()
			c := limitedClient(t, srv.URL, config.PrometheusLimits{MaxSeries: 10, MaxBytes: 64 << 10})
			_, _, _, err := c.Query(context.Background(), "x", time.Time{})
			var le *LimitError
			if !errors.As(err, &le) {
				t.Fatalf("err = %v, want a *LimitError", err)
			}
		})
	}
}

// FuzzCapReader: whatever the server sends, a cut answer is valid JSON when
// the answer was, and the reader returns at most max-bytes of it plus the
// warning.
func FuzzCapReader(f *testing.F) {
	f.Add([]byte(vectorHead+vectorElem+","+vectorElem+vectorEnd), 1, 4096)
	f.Add([]byte(`{"status":"success","data":["a","b\"c",{"x":[1,2]},null,3]}`), 2, 30)
	f.Add([]byte(`{"data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"2"]]},{}]},"warnings":["w"]}`), 1, 1000)
	f.Fuzz(func(t *testing.T, data []byte, maxSeries, maxBytes int) {
		if maxSeries <= 0 || maxBytes <= 0 || maxBytes > 1<<20 {
			return
		}
		for _, list := range []int{listResult, listData} {
			r := &capReader{src: io.NopCloser(bytes.NewReader(data)), limits: Limits{MaxBytes: int64(maxBytes), MaxSeries: maxSeries}, address: "http://x", list: list}
			out, err := io.ReadAll(r)
			var le *LimitError
			if err != nil && !errors.As(err, &le) {
				t.Fatalf("err = %v", err)
			}
			if err != nil || !json.Valid(data) {
				continue
			}
			if !json.Valid(out) {
				t.Fatalf("valid input %q became invalid %q", data, out)
			}
			if len(out) > maxBytes+len(data) && len(out) > maxBytes+1024 {
				t.Fatalf("%d bytes out of %d in with max %d", len(out), len(data), maxBytes)
			}
		}
	})
}

// TestLimitRefreshBudget: refreshes of ten queries at the runner's full
// concurrency against a server answering 10⁶ series to each stay within a
// fixed heap: every answer is cut, none is held whole.
func TestLimitRefreshBudget(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(stream{head: vectorHead, elem: vectorElem, sep: ",", end: vectorEnd, n: 1_000_000}.serve))
	defer srv.Close()
	r := NewRunner(limitedClient(t, srv.URL, config.PrometheusLimits{}), RunnerOptions{Timeout: 30 * time.Second})
	var reqs []Request
	for i := range 2 * DefaultConcurrency {
		reqs = append(reqs, Request{Key: strconv.Itoa(i), Expr: "x" + strconv.Itoa(i)})
	}
	peak, took := testenv.PeakHeap(t, func() {
		for range 3 {
			for _, res := range r.RunAll(context.Background(), reqs) {
				if res.Err != nil || len(res.Series) != DefaultMaxSeries || CutWarning(res.Warnings) == "" {
					t.Errorf("%s: %d series, %q, %v", res.Request.Key, len(res.Series), res.Warnings, res.Err)
				}
			}
		}
	})
	t.Logf("3 refreshes of %d queries, 10^6 series each: peak heap %d MB, %v CPU", len(reqs), peak>>20, took)
	if peak > 128<<20 {
		t.Fatalf("peak heap %d MB, want ≤ 128 MB", peak>>20)
	}
}

// TestLimitSharedBudget: answers in flight at once share one budget; past
// it each is cut after its complete series with a warning naming the
// budget and the way out, and the bytes held together never pass the
// budget plus each answer's floor.
func TestLimitSharedBudget(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(stream{head: vectorHead, elem: vectorElem, sep: ",", end: vectorEnd, n: 1_000_000}.serve))
	defer srv.Close()
	c := limitedClient(t, srv.URL, config.PrometheusLimits{MaxSeries: 1_000_000})
	b := NewBudget(4 << 20)
	c.SetBudget(b)
	r := NewRunner(c, RunnerOptions{Timeout: 30 * time.Second})
	var reqs []Request
	for i := range 2 * DefaultConcurrency {
		reqs = append(reqs, Request{Key: strconv.Itoa(i), Expr: "x" + strconv.Itoa(i)})
	}
	for _, res := range r.RunAll(context.Background(), reqs) {
		w := CutWarning(res.Warnings)
		if res.Err != nil || len(res.Series) == 0 || !strings.Contains(w, "the 4 MiB shared by the answers in flight (this process's memory budget)") ||
			!strings.Contains(w, hintBudget) {
			t.Errorf("%s: %d series, %q, %v", res.Request.Key, len(res.Series), res.Warnings, res.Err)
		}
	}
	if most := b.Max + DefaultConcurrency*b.Floor; b.Peak() > most {
		t.Fatalf("the answers held %d bytes at once, want ≤ %d", b.Peak(), most)
	}
	if b.used != 0 {
		t.Fatalf("%d bytes still held after every evaluation ended", b.used)
	}
}
