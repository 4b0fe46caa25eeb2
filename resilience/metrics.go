package resilience

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes of stormctl_attempts_total.
const (
	OutcomeSuccess     = "success"
	OutcomeError       = "error"
	OutcomeTimeout     = "timeout"
	OutcomeThrottled   = "throttled"
	OutcomeShed        = "shed"
	OutcomeBreakerOpen = "breaker_open"
)

// Metrics is DESIGN.md's metric contract. A nil *Metrics records nothing.
type Metrics struct {
	Requests        *prometheus.CounterVec   // stormctl_requests_total{service,dependency}
	Attempts        *prometheus.CounterVec   // stormctl_attempts_total{service,dependency,outcome}
	Retries         *prometheus.CounterVec   // stormctl_retries_total{service,dependency,reason}
	AttemptDuration *prometheus.HistogramVec // stormctl_attempt_duration_seconds{service,dependency}
	BreakerState    *prometheus.GaugeVec     // stormctl_breaker_state{service,dependency,state}
	ServerRequests  *prometheus.CounterVec   // stormctl_server_requests_total{service,code}
	PoolInUse       *prometheus.GaugeVec     // stormctl_pool_in_use{service,pool}
	PoolCapacity    *prometheus.GaugeVec     // stormctl_pool_capacity{service,pool}
	PoolWaiting     *prometheus.GaugeVec     // stormctl_pool_waiting{service,pool}
}

// NewMetrics creates the metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	sd := []string{"service", "dependency"}
	sp := []string{"service", "pool"}
	m := &Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stormctl_requests_total",
			Help: "Logical requests: one per caller intent, however many attempts it took."}, sd),
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stormctl_attempts_total",
			Help: "Attempts sent to a dependency (or refused by its breaker), by outcome."},
			[]string{"service", "dependency", "outcome"}),
		Retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stormctl_retries_total",
			Help: "Retries sent, by the class of the failure retried."}, []string{"service", "dependency", "reason"}),
		AttemptDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "stormctl_attempt_duration_seconds",
			Help: "Duration of attempts that reached the dependency.", Buckets: prometheus.DefBuckets}, sd),
		BreakerState: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "stormctl_breaker_state",
			Help: "1 on the current breaker state of a dependency, 0 on the others."},
			[]string{"service", "dependency", "state"}),
		ServerRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stormctl_server_requests_total",
			Help: "Requests served at ingress, by status code (shed requests are 503)."}, []string{"service", "code"}),
		PoolInUse: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "stormctl_pool_in_use",
			Help: "Pool slots in use."}, sp),
		PoolCapacity: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "stormctl_pool_capacity",
			Help: "Pool capacity."}, sp),
		PoolWaiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "stormctl_pool_waiting",
			Help: "Callers waiting for a pool slot."}, sp),
	}
	for _, c := range []prometheus.Collector{m.Requests, m.Attempts, m.Retries, m.AttemptDuration,
		m.BreakerState, m.ServerRequests, m.PoolInUse, m.PoolCapacity, m.PoolWaiting} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register stormctl metrics: %w", err)
		}
	}
	return m, nil
}

// SetPool publishes the state of a pool (connections, workers, a bulkhead).
func (m *Metrics) SetPool(service, pool string, inUse, capacity, waiting int) {
	if m == nil {
		return
	}
	m.PoolInUse.WithLabelValues(service, pool).Set(float64(inUse))
	m.PoolCapacity.WithLabelValues(service, pool).Set(float64(capacity))
	m.PoolWaiting.WithLabelValues(service, pool).Set(float64(waiting))
}

// depMetrics are one retrier's series, resolved once so a request does no
// label lookups.
type depMetrics struct {
	requests prometheus.Counter
	attempts map[string]prometheus.Counter
	retries  *prometheus.CounterVec // curried with service and dependency
	duration prometheus.Observer
	states   [len(stateNames)]prometheus.Gauge
}

func (m *Metrics) dependency(service, dependency string) *depMetrics {
	if m == nil {
		return nil
	}
	d := &depMetrics{
		requests: m.Requests.WithLabelValues(service, dependency),
		attempts: map[string]prometheus.Counter{},
		retries:  m.Retries.MustCurryWith(prometheus.Labels{"service": service, "dependency": dependency}),
		duration: m.AttemptDuration.WithLabelValues(service, dependency),
	}
	for _, o := range []string{OutcomeSuccess, OutcomeError, OutcomeTimeout, OutcomeThrottled, OutcomeShed, OutcomeBreakerOpen} {
		d.attempts[o] = m.Attempts.WithLabelValues(service, dependency, o)
	}
	for i, s := range stateNames {
		d.states[i] = m.BreakerState.WithLabelValues(service, dependency, s)
	}
	d.setState(Closed)
	return d
}

func (d *depMetrics) request() {
	if d != nil {
		d.requests.Inc()
	}
}

func (d *depMetrics) attempt(outcome string, seconds float64) {
	if d == nil {
		return
	}
	d.attempts[outcome].Inc()
	if outcome != OutcomeBreakerOpen {
		d.duration.Observe(seconds)
	}
}

func (d *depMetrics) retry(reason Class) {
	if d != nil {
		d.retries.WithLabelValues(reason.String()).Inc()
	}
}

func (d *depMetrics) setState(s State) {
	if d == nil {
		return
	}
	for i, g := range d.states {
		if State(i) == s {
			g.Set(1)
		} else {
			g.Set(0)
		}
	}
}
