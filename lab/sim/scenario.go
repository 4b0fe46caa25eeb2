package sim

import (
	"embed"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/yamlfile"
)

// Scenario is a simulated fleet, its traffic and its faults, as written in
// YAML (see scenarios/*.yaml).
type Scenario struct {
	Name        string `yaml:"name"`
	Title       string `yaml:"title"`
	Description string `yaml:"description"`
	// Protects names the scenario this one is the protected variant of.
	Protects       string           `yaml:"protects"`
	Duration       Duration         `yaml:"duration"`
	ScrapeInterval Duration         `yaml:"scrape_interval"`
	Edge           Edge             `yaml:"edge"`
	Services       []ServiceSpec    `yaml:"services"`
	Dependencies   []DependencySpec `yaml:"dependencies"`
	Faults         []Fault          `yaml:"faults"`
	// Restarts replace every pod of a service at a simulated time, as a
	// rollout restart does.
	Restarts []Restart `yaml:"restarts"`
	// Thresholds amend saved queries' thresholds for this fleet, by query
	// id, as its own catalogue file would: the built-in dependency_p99
	// assumes a 1 s timeout, a fleet with 2 s timeouts sets its own.
	Thresholds map[string]ThresholdSpec `yaml:"thresholds"`

	file string
}

// ThresholdSpec replaces a saved query's warn and crit levels.
type ThresholdSpec struct {
	Warn *float64 `yaml:"warn"`
	Crit *float64 `yaml:"crit"`
}

// Edge is the open-loop traffic entering the fleet.
type Edge struct {
	Service string  `yaml:"service"`
	RPS     float64 `yaml:"rps"`
	// Deadline is the end-to-end time the caller waits; the edge service
	// knows it and answers 504 when it passes. Zero: none.
	Deadline Duration `yaml:"deadline"`
}

// ServiceSpec is a service with pods, thread pools, endpoints and policies.
type ServiceSpec struct {
	Name       string          `yaml:"name"`
	Replicas   int             `yaml:"replicas"`
	Pools      []PoolSpec      `yaml:"pools"`
	Endpoints  []EndpointSpec  `yaml:"endpoints"`
	Autoscaler *AutoscalerSpec `yaml:"autoscaler"`
	// Degraded is the path taken when a call with fallback fails or the
	// degraded lever is on: a queue drained at a fixed rate (e.g. manual review).
	Degraded *DegradedSpec `yaml:"degraded"`
	// Budget is a retry budget shared by the calls of one pod, or of the
	// whole fleet with scope "fleet".
	Budget *BudgetSpec `yaml:"budget"`
}

// PoolSpec is a per-pod thread or connection pool. A request holds a slot
// from arrival to answer, including while it waits on dependencies and
// backoff; endpoints naming the same pool share it, distinct pools are
// bulkheads.
type PoolSpec struct {
	Name        string   `yaml:"name"`
	Size        int      `yaml:"size"`
	MaxWaiting  int      `yaml:"max_waiting"`
	WaitTimeout Duration `yaml:"wait_timeout"`
}

// EndpointSpec is one kind of inbound request.
type EndpointSpec struct {
	Name   string     `yaml:"name"`
	Weight float64    `yaml:"weight"`
	Pool   string     `yaml:"pool"`
	Work   Duration   `yaml:"work"`
	Calls  []CallSpec `yaml:"calls"`
}

// CallSpec is a call to a dependency or another service, through retry
// layers listed outermost first (application, HTTP transport, sidecar).
type CallSpec struct {
	Target            string       `yaml:"target"`
	Layers            []LayerSpec  `yaml:"layers"`
	Breaker           *BreakerSpec `yaml:"breaker"`
	PropagateDeadline bool         `yaml:"propagate_deadline"`
	// Fallback sends a failed call (or every call while the degraded lever
	// is on) to the service's degraded path instead of failing the request.
	Fallback bool `yaml:"fallback"`
	// FallbackOn limits the fallback to these failures of the call (names
	// as in retry_on, plus breaker_open for a call its breaker refused), as
	// a fleet that sends orders to manual review only while its breaker is
	// open; empty: every failure. [lever] alone: no failure, so only the
	// degraded lever sends calls there, as a checkout that defers payments
	// only when told to.
	FallbackOn []string `yaml:"fallback_on"`
	// Cache answers some of the call's lookups from the pod's memory.
	Cache *CacheSpec `yaml:"cache"`
}

// CacheSpec is a per-pod read-through cache in front of a call: HitShare of
// the lookups ask for one of Keys popular keys, each answered from memory
// for TTL after the pod last fetched it successfully; every other lookup
// calls the target. A pod starts with an empty cache, and a cache whose
// fetches fail goes cold as its keys expire.
type CacheSpec struct {
	HitShare float64  `yaml:"hit_share"`
	Keys     int      `yaml:"keys"`
	TTL      Duration `yaml:"ttl"`
}

// LayerSpec is one retry layer.
type LayerSpec struct {
	Name        string   `yaml:"name"`
	MaxAttempts int      `yaml:"max_attempts"`
	Timeout     Duration `yaml:"timeout"`
	Backoff     Backoff  `yaml:"backoff"`
	RetryOn     []string `yaml:"retry_on"`
	// HonourRetryAfter makes the layer sleep at least what a 429 asks;
	// without it a 429 is retried as if no time had been asked.
	HonourRetryAfter bool `yaml:"honour_retry_after"`
	// IgnoreDeadline makes the layer time out and retry by its own settings
	// as if the request had no deadline: deadlines that disagree.
	IgnoreDeadline bool `yaml:"ignore_deadline"`
}

// Backoff is the sleep between attempts of one layer.
type Backoff struct {
	Base   Duration `yaml:"base"`
	Cap    Duration `yaml:"cap"`
	Jitter bool     `yaml:"jitter"`
}

// BreakerSpec is a circuit breaker on a call, per pod or shared by the fleet.
type BreakerSpec struct {
	Scope               string   `yaml:"scope"`
	ConsecutiveFailures int      `yaml:"consecutive_failures"`
	OpenFor             Duration `yaml:"open_for"`
	HalfOpenProbes      int      `yaml:"half_open_probes"`
	// FleetProbesPerSecond limits half-open probes across the fleet (scope fleet).
	FleetProbesPerSecond int `yaml:"fleet_probes_per_second"`
	// Failures are the failure classes (retry_on names) the breaker counts;
	// any other answer leaves its count alone, as Envoy's outlier detection
	// with split_external_local_origin_errors counts only the upstream's own
	// 5xx and not its caller's timeouts. Empty: every failure counts.
	Failures []string `yaml:"failures"`
}

// BudgetSpec is a token-bucket retry budget.
type BudgetSpec struct {
	Scope     string  `yaml:"scope"`
	Ratio     float64 `yaml:"ratio"`
	PerSecond float64 `yaml:"per_second"`
	Burst     float64 `yaml:"burst"`
}

// AutoscalerSpec grows or shrinks a service on its pool utilisation.
type AutoscalerSpec struct {
	Pool              string   `yaml:"pool"`
	TargetUtilization float64  `yaml:"target_utilization"`
	Interval          Duration `yaml:"interval"`
	Min               int      `yaml:"min"`
	Max               int      `yaml:"max"`
	Startup           Duration `yaml:"startup"`
	// ScaleDownStabilization keeps the fleet at the largest size wanted
	// over that window before shrinking it, as a Kubernetes HPA's
	// behavior.scaleDown.stabilizationWindowSeconds does (default there
	// 5m); zero shrinks at once.
	ScaleDownStabilization Duration `yaml:"scale_down_stabilization"`
}

// DegradedSpec is a degraded path with its own capacity.
type DegradedSpec struct {
	Name      string  `yaml:"name"`
	MaxQueue  int     `yaml:"max_queue"`
	DrainRate float64 `yaml:"drain_rate"`
}

// DependencySpec is a leaf dependency.
type DependencySpec struct {
	Name string `yaml:"name"`
	// Instances sit behind a round-robin balancer (default 1), so a retry
	// usually reaches another one; Capacity, Queue and Contention are per
	// instance, MaxStartRate holds for them all.
	Instances int `yaml:"instances"`
	// Capacity is how many requests it works on at once; more wait in a
	// FIFO queue of at most Queue, past which it sheds with ShedCode.
	Capacity int `yaml:"capacity"`
	Queue    int `yaml:"queue"`
	ShedCode int `yaml:"shed_code"`
	// Contention is the number of requests in progress past which they
	// share the server's CPU: a request starting with n in progress takes
	// n/Contention times its service time. Zero: no sharing; Capacity then
	// works like a pool of independent workers.
	Contention float64 `yaml:"contention"`
	// MaxStartRate sheds starts above this rate (per second), a token
	// bucket holding Burst's worth of starts (default 100ms): a rate limit
	// over a longer Burst lets a surge through until it has used it up.
	// Zero: none.
	MaxStartRate float64  `yaml:"max_start_rate"`
	Burst        Duration `yaml:"burst"`
	// ShedWork is the CPU a shed request costs (zero: nothing): under a
	// flood of retried 429s, refusing becomes the load.
	ShedWork   Duration `yaml:"shed_work"`
	RetryAfter Duration `yaml:"retry_after"`
	Latency    Latency  `yaml:"latency"`
	ErrorShare float64  `yaml:"error_share"`
	// ConnectCost is the work a new connection costs the dependency before
	// its first request (TLS handshake, authentication, session setup). A
	// caller's pod reuses a connection whose answer it received; a timed-out
	// attempt closes its connection, so timeouts make reconnects. Zero:
	// connections are free and not tracked.
	ConnectCost Duration `yaml:"connect_cost"`
	// DropAbandoned drops queued work whose caller gave up; by default a
	// dependency keeps working on it, as real servers do.
	DropAbandoned bool `yaml:"drop_abandoned"`
}

// Latency is a log-normal distribution fitted to its median and p99.
type Latency struct {
	P50 Duration `yaml:"p50"`
	P99 Duration `yaml:"p99"`
}

// Fault changes a dependency during [At, At+For).
type Fault struct {
	Dependency string   `yaml:"dependency"`
	At         Duration `yaml:"at"`
	For        Duration `yaml:"for"`
	Latency    *Latency `yaml:"latency"`
	// SlowShare is the share of calls that take the fault's Latency, the
	// others keeping the normal one: a latency tail rather than a slowdown
	// of every call. Zero: every call.
	SlowShare float64 `yaml:"slow_share"`
	// Instances limits the fault to the dependency's first Instances
	// instances (one slow replica); zero: all of them.
	Instances         int      `yaml:"instances"`
	ErrorShare        *float64 `yaml:"error_share"`
	ConnectErrorShare float64  `yaml:"connect_error_share"`
	ResetShare        float64  `yaml:"reset_share"`
	CapacityFactor    float64  `yaml:"capacity_factor"`
	MaxStartRate      *float64 `yaml:"max_start_rate"`
}

// Restart replaces every pod of Service at At: requests in flight on the
// old pods fail, and the new pods, with empty pools and caches, fresh
// breakers and budgets and no open connections, become ready after Startup.
type Restart struct {
	Service string   `yaml:"service"`
	At      Duration `yaml:"at"`
	Startup Duration `yaml:"startup"`
}

// Duration is a time.Duration written as "200ms", "4m".
type Duration time.Duration

// UnmarshalText parses a Go duration.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes a Go duration.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

//go:embed scenarios/*.yaml
var builtin embed.FS

// Builtins returns the embedded scenarios, sorted by name.
func Builtins() ([]*Scenario, error) {
	entries, err := fs.ReadDir(builtin, "scenarios")
	if err != nil {
		return nil, err
	}
	var out []*Scenario
	for _, e := range entries {
		data, err := builtin.ReadFile("scenarios/" + e.Name())
		if err != nil {
			return nil, err
		}
		sc, err := Parse("scenarios/"+e.Name(), data)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Find returns the built-in scenario called name, or reads it from a file
// when name ends in .yaml or .yml.
func Find(name string) (*Scenario, error) {
	if ext := filepath.Ext(name); ext == ".yaml" || ext == ".yml" {
		data, err := yamlfile.ReadFile(name, yamlfile.DefaultLimits())
		if err != nil {
			return nil, fmt.Errorf("scenario: %w", err)
		}
		return Parse(name, data)
	}
	all, err := Builtins()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range all {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return nil, &UnknownScenarioError{Name: name, Known: names}
}

// UnknownScenarioError names a scenario that is neither built in nor a file.
type UnknownScenarioError struct {
	Name  string
	Known []string
}

func (e *UnknownScenarioError) Error() string {
	return fmt.Sprintf("unknown scenario %q (built-in: %s; or give a .yaml file)", e.Name, strings.Join(e.Known, ", "))
}

// decode is yamlfile.Decode that turns a panic of the YAML library into an
// error: goccy/go-yaml v1.19.2 dereferences nil decoding a tagged flow
// mapping where a sequence belongs ("services: ! {0}").
func decode(file string, data []byte, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &yamlfile.Error{File: file, Msg: fmt.Sprintf("cannot decode: %v", r)}
		}
	}()
	return yamlfile.Decode(file, data, v)
}

// Parse decodes and validates a scenario; errors carry file:line:col.
func Parse(file string, data []byte) (*Scenario, error) {
	var sc Scenario
	if err := decode(file, data, &sc); err != nil {
		return nil, err
	}
	doc, err := yamlfile.Parse(file, data)
	if err != nil {
		return nil, err
	}
	sc.file = file
	sc.defaults()
	if errs := sc.validate(doc); len(errs) > 0 {
		return nil, errs.Err()
	}
	return &sc, nil
}
