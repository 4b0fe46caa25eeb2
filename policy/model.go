package policy

import (
	"encoding/json"
	"math"
	"strings"
	"time"
)

// Class is a kind of failed attempt, as retry policies name them.
type Class uint8

// The failure classes a policy may retry. A 5xx is any server error
// answer (502, 503 and 504 included); a 429 is throttling.
const (
	Timeout      Class = iota // the attempt's own timeout expired
	ConnectError              // no connection: nothing reached the server
	Reset                     // the connection broke before an answer
	ServerError               // a 5xx answer
	Throttled                 // a 429 answer
	numClasses
)

// Classes lists every class, in output order.
var Classes = []Class{Timeout, ConnectError, Reset, ServerError, Throttled}

var classNames = [numClasses]string{"timeout", "connect_error", "reset", "5xx", "429"}

func (c Class) String() string {
	if c < numClasses {
		return classNames[c]
	}
	return "class?"
}

// classAliases are the other names a CallPath may use for a class.
var classAliases = map[string]Class{
	"timeout": Timeout, "connect_error": ConnectError, "connect": ConnectError, "reset": Reset,
	"5xx": ServerError, "server_error": ServerError, "unavailable": ServerError, "500": ServerError,
	"502": ServerError, "503": ServerError, "504": ServerError, "429": Throttled, "throttled": Throttled,
}

// ClassSet is a set of classes; its JSON is the list of names.
type ClassSet uint8

// Has reports whether c is in s.
func (s ClassSet) Has(c Class) bool { return s&(1<<c) != 0 }

// With returns s with cs added.
func (s ClassSet) With(cs ...Class) ClassSet {
	for _, c := range cs {
		s |= 1 << c
	}
	return s
}

// Names lists the classes of s in output order.
func (s ClassSet) Names() []string {
	out := []string{}
	for _, c := range Classes {
		if s.Has(c) {
			out = append(out, c.String())
		}
	}
	return out
}

func (s ClassSet) String() string { return strings.Join(s.Names(), ", ") }

// MarshalJSON writes the names.
func (s ClassSet) MarshalJSON() ([]byte, error) { return json.Marshal(s.Names()) }

// Path is a call path: the layers one request crosses, outermost first,
// down to the dependency.
type Path struct {
	Name string `json:"name"`
	// Rate is the offered logical requests per second at the entry; 0 when
	// not known.
	Rate float64 `json:"rate_rps"`
	// Deadline is the entry's end-to-end deadline, known to the entry
	// service; 0: none.
	Deadline   Duration   `json:"deadline_s"`
	Hops       []*Hop     `json:"hops"`
	Dependency Dependency `json:"dependency"`
	Files      []string   `json:"files"`
}

// Hop is one layer that may retry what is below it. A hop with a Pool is
// a service receiving requests over the network; a hop without one is a
// layer in the same request chain as the hop above it (an HTTP client, a
// sidecar), abandoned when that hop gives up on an attempt.
type Hop struct {
	Service string `json:"service"`
	// Format is the file format the hop came from: callpath, envoy, istio,
	// resilience4j or grpc; Source is where (file:line:col).
	Format string `json:"format"`
	Source string `json:"source"`
	Pool   *Pool  `json:"pool,omitempty"`
	// Timeout bounds one attempt; 0: none of its own.
	Timeout Duration `json:"timeout_s"`
	// Deadline bounds the hop's whole call, retries included (Envoy's
	// route timeout, gRPC's method timeout); 0: none.
	Deadline Duration `json:"deadline_s"`
	// IgnoreDeadline: the hop times out and retries by its own settings
	// as if the entry had no deadline.
	IgnoreDeadline bool `json:"ignore_deadline"`
	// PropagateDeadline: the hop passes the deadline it knows to the
	// service it calls (gRPC does; plain HTTP does not).
	PropagateDeadline bool     `json:"propagate_deadline"`
	Retry             Retry    `json:"retry"`
	Breaker           *Breaker `json:"breaker,omitempty"`
	// Notes say which defaults the importer applied and what it could
	// not model.
	Notes []string `json:"notes,omitempty"`
}

// Pool is the thread or connection pool a service holds per request.
type Pool struct {
	Name string `json:"name"`
	// Size is per replica.
	Size     int  `json:"size"`
	Replicas int  `json:"replicas"`
	Shared   bool `json:"shared"`
}

// Capacity is the pool's size across replicas.
func (p *Pool) Capacity() int { return p.Size * max(p.Replicas, 1) }

// Retry is a hop's retry policy.
type Retry struct {
	// Attempts counts the first one: 1 never retries.
	Attempts         int      `json:"attempts"`
	On               ClassSet `json:"on"`
	Backoff          Backoff  `json:"backoff"`
	Budget           *Budget  `json:"budget,omitempty"`
	IdempotencyKey   bool     `json:"idempotency_key"`
	HonourRetryAfter bool     `json:"honour_retry_after"`
}

// retries reports whether the policy can retry anything.
func (r Retry) retries() bool { return r.Attempts > 1 && r.On != 0 }

// Backoff kinds.
const (
	BackoffNone        = "none"
	BackoffConstant    = "constant"
	BackoffExponential = "exponential"
	// BackoffEnvoy is Envoy's fully jittered schedule: before retry k,
	// random(0, (2^k - 1)·base), capped at max.
	BackoffEnvoy = "envoy"
)

// Jitter kinds: none, full (uniform in [0, s)), proportional (uniform in
// [s(1-f), s(1+f)), resilience4j's randomized wait).
const (
	JitterNone         = "none"
	JitterFull         = "full"
	JitterProportional = "proportional"
)

// Backoff is the sleep between attempts.
type Backoff struct {
	Kind string   `json:"kind"`
	Base Duration `json:"base_s"`
	// Max caps an exponential sleep; 0: uncapped.
	Max        Duration `json:"max_s"`
	Multiplier float64  `json:"multiplier"`
	Jitter     string   `json:"jitter"`
	// JitterFactor is the f of proportional jitter.
	JitterFactor float64 `json:"jitter_factor,omitempty"`
}

// sleep is the nominal sleep before retry k (1 for the first retry).
func (b Backoff) sleep(k int) time.Duration {
	switch b.Kind {
	case BackoffConstant:
		return b.Base.D()
	case BackoffExponential:
		m := b.Multiplier
		if m <= 0 {
			m = 2
		}
		s := float64(b.Base) * math.Pow(m, float64(k-1))
		if b.Max > 0 {
			s = math.Min(s, float64(b.Max))
		}
		return time.Duration(math.Min(s, float64(24*time.Hour)))
	case BackoffEnvoy:
		s := float64(b.Base) * (math.Pow(2, float64(min(k, 40))) - 1)
		if b.Max > 0 {
			s = math.Min(s, float64(b.Max))
		}
		return time.Duration(math.Min(s, float64(24*time.Hour)))
	}
	return 0
}

// Ceiling is the longest sleep before retry k; Mean its average.
func (b Backoff) Ceiling(k int) time.Duration {
	s := b.sleep(k)
	if b.Jitter == JitterProportional {
		return time.Duration(float64(s) * (1 + b.JitterFactor))
	}
	return s
}

// Mean is the average sleep before retry k.
func (b Backoff) Mean(k int) time.Duration {
	s := b.sleep(k)
	if b.Jitter == JitterFull {
		return s / 2
	}
	return s
}

// none reports a backoff that re-sends at once.
func (b Backoff) none() bool { return b.Kind == BackoffNone || b.Kind == "" || b.Base <= 0 }

// Budget limits retries beyond the per-request attempts.
type Budget struct {
	// Kind: ratio (retries ≤ ratio of requests), tokens (gRPC retry
	// throttling), concurrency (Envoy's max_retries in flight).
	Kind      string  `json:"kind"`
	Ratio     float64 `json:"ratio,omitempty"`
	PerSecond float64 `json:"per_second,omitempty"`
	MaxTokens float64 `json:"max_tokens,omitempty"`
	Max       int     `json:"max,omitempty"`
	// Scope: process (each instance its own) or fleet.
	Scope string `json:"scope"`
}

// Breaker is a circuit breaker on the hop's calls.
type Breaker struct {
	Kind   string `json:"kind"`
	Scope  string `json:"scope"`
	Source string `json:"source"`
}

// Dependency is what the innermost hop calls.
type Dependency struct {
	Name string   `json:"name"`
	P99  Duration `json:"p99_s"`
	// Success is the share of calls answered within the timeout while it
	// is degraded; nil when not given.
	Success *float64 `json:"success,omitempty"`
	// RetryAfter is what its 429s ask for; 0: nothing.
	RetryAfter Duration `json:"retry_after_s"`
}

// Duration is a time.Duration written in JSON as seconds.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes seconds.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(round3(time.Duration(d).Seconds()))
}

func (d Duration) String() string {
	if d == 0 {
		return "-"
	}
	return time.Duration(d).String()
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// Processes splits the hops into the services they run in: a hop with a
// pool (or the first hop) starts one, the hops below it without a pool
// are layers of its request chain.
func (p *Path) Processes() [][]*Hop {
	var out [][]*Hop
	for i, h := range p.Hops {
		if i == 0 || h.Pool != nil {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], h)
	}
	return out
}

// propagates reports whether the process of hop h passes its deadline to
// the service it calls.
func (p *Path) propagates(h int) bool {
	for i := h; i >= 0; i-- {
		if p.Hops[i].PropagateDeadline {
			return true
		}
		if i == 0 || p.Hops[i].Pool != nil {
			break
		}
	}
	for i := h + 1; i < len(p.Hops) && p.Hops[i].Pool == nil; i++ {
		if p.Hops[i].PropagateDeadline {
			return true
		}
	}
	return false
}
