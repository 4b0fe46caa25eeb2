package resilience

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/open-feature/go-sdk/openfeature"
	"github.com/prometheus/client_golang/prometheus"
)

// ShedConfig configures Shed.
type ShedConfig struct {
	Service string
	Flags   openfeature.IClient // reads stormctl.shed.percent; nil sheds nothing
	Rand    Rand                // default math/rand/v2's global source
	// RetryAfter is sent with every shed response, rounded up to whole
	// seconds. Default 1s.
	RetryAfter time.Duration
	Metrics    *Metrics // counts stormctl_server_requests_total{service,code}
}

// Shed is ingress middleware: it rejects the share of new requests that the
// stormctl.shed.percent lever sets with 503, Retry-After and ShedHeader,
// before next does any work. Requests already admitted are never cut.
func Shed(next http.Handler, cfg ShedConfig) http.Handler {
	levers := NewLevers(cfg.Flags, cfg.Service)
	rnd := cfg.Rand
	if rnd == nil {
		rnd = globalRand{}
	}
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = time.Second
	}
	retryAfter := strconv.FormatInt(int64(math.Ceil(cfg.RetryAfter.Seconds())), 10)
	var codes *prometheus.CounterVec
	if cfg.Metrics != nil {
		codes = cfg.Metrics.ServerRequests.MustCurryWith(prometheus.Labels{"service": cfg.Service})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if pct := levers.ShedPercent(r.Context()); pct > 0 && rnd.Float64()*100 < float64(pct) {
			w.Header().Set("Retry-After", retryAfter)
			w.Header().Set(ShedHeader, "1")
			http.Error(w, "load shed by stormctl lever: retry later", http.StatusServiceUnavailable)
			if codes != nil {
				codes.WithLabelValues("503").Inc()
			}
			return
		}
		if codes == nil {
			next.ServeHTTP(w, r)
			return
		}
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		codes.WithLabelValues(strconv.Itoa(rec.code())).Inc()
	})
}

// statusRecorder remembers the status code written through it; Unwrap
// keeps http.ResponseController working (Flush, Hijack, deadlines).
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 && code >= 200 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Flush keeps streaming handlers that assert http.Flusher working.
func (s *statusRecorder) Flush() {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	_ = http.NewResponseController(s.ResponseWriter).Flush()
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusRecorder) code() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}
