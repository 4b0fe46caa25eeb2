package resilience

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// State is a breaker state, as exported in stormctl_breaker_state.
type State uint8

// Breaker states. ForcedOpen is set by the stormctl.breaker.forced_open
// lever: it refuses everything and never changes by itself.
const (
	Closed State = iota
	Open
	HalfOpen
	ForcedOpen
)

var stateNames = [...]string{"closed", "open", "half_open", "forced_open"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", int(s))
}

// ErrBreakerOpen matches every *BreakerOpenError with errors.Is.
var ErrBreakerOpen = errors.New("breaker open")

// BreakerOpenError is returned without any attempt when a dependency's
// breaker refuses the call.
type BreakerOpenError struct {
	Dependency string
	Forced     bool      // by the lever, fleet-wide
	Until      time.Time // when it half-opens; zero when forced or waiting for a probe slot
}

func (e *BreakerOpenError) Error() string {
	switch {
	case e.Forced:
		return fmt.Sprintf("breaker for %s forced open by lever", e.Dependency)
	case e.Until.IsZero():
		return fmt.Sprintf("breaker for %s half-open: probe limit reached", e.Dependency)
	}
	return fmt.Sprintf("breaker for %s open until %s", e.Dependency, e.Until.Format(time.RFC3339Nano))
}

// Is makes errors.Is(err, ErrBreakerOpen) true.
func (e *BreakerOpenError) Is(target error) bool { return target == ErrBreakerOpen }

// BreakerConfig sets when a breaker opens and how it recovers.
type BreakerConfig struct {
	// ConsecutiveFailures opens the breaker after that many failed attempts
	// in a row. Default 5.
	ConsecutiveFailures int
	// FailureRate (0–1) also opens it when that share of the attempts in the
	// current Window failed, once MinRequests were seen; 0 turns it off.
	FailureRate float64
	Window      time.Duration // tumbling window of FailureRate; default 10s
	MinRequests int           // default 20
	// OpenFor is how long it refuses before letting probes through. Default 5s.
	OpenFor time.Duration
	// HalfOpenProbes is how many probes one process runs at once. Default 1.
	HalfOpenProbes int
	// FleetProbesPerSecond limits probes across the fleet (with Redis). Default 1.
	FleetProbesPerSecond int
	Disabled             bool
}

func (c BreakerConfig) withDefaults() BreakerConfig {
	if c.ConsecutiveFailures == 0 {
		c.ConsecutiveFailures = 5
	}
	if c.Window == 0 {
		c.Window = 10 * time.Second
	}
	if c.MinRequests == 0 {
		c.MinRequests = 20
	}
	if c.OpenFor == 0 {
		c.OpenFor = 5 * time.Second
	}
	if c.HalfOpenProbes == 0 {
		c.HalfOpenProbes = 1
	}
	if c.FleetProbesPerSecond == 0 {
		c.FleetProbesPerSecond = 1
	}
	return c
}

// Validate reports a configuration that cannot work.
func (c BreakerConfig) Validate() error {
	if c.Disabled {
		return nil
	}
	if c.ConsecutiveFailures < 1 || c.FailureRate < 0 || c.FailureRate > 1 || c.Window <= 0 ||
		c.MinRequests < 1 || c.OpenFor <= 0 || c.HalfOpenProbes < 1 || c.FleetProbesPerSecond < 1 {
		return fmt.Errorf("breaker %+v: counts and durations must be positive, failure rate in [0, 1]", c)
	}
	return nil
}

// ProbeLimiter admits half-open probes to a dependency across a fleet.
// RedisProbeLimiter is one; it is asked only when a local probe slot is free.
type ProbeLimiter interface {
	AllowProbe(dependency string, now time.Time) bool
}

// Breaker is the circuit breaker of one dependency. Its methods take the
// time, so a simulation can drive it on a virtual clock.
type Breaker struct {
	dependency string
	cfg        BreakerConfig
	limiter    ProbeLimiter
	// onChange is called with the new reported state, under the lock.
	onChange func(State)

	mu          sync.Mutex
	state       State // Closed, Open or HalfOpen; forced is reported over it
	forced      bool
	reported    State
	openedAt    time.Time
	consecutive int
	winStart    time.Time
	winTotal    int
	winFailed   int
	probes      int // in flight
}

// NewBreaker returns a closed breaker; limiter may be nil.
func NewBreaker(dependency string, cfg BreakerConfig, limiter ProbeLimiter) *Breaker {
	return &Breaker{dependency: dependency, cfg: cfg.withDefaults(), limiter: limiter}
}

// SetForced applies the forced-open lever.
func (b *Breaker) SetForced(forced bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.forced = forced
	b.report()
}

// State returns the state at now.
func (b *Breaker) State(now time.Time) State {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	return b.reported
}

// Allow says whether an attempt may start at now. probe is true when the
// attempt is a half-open probe; its result must be given to Record.
func (b *Breaker) Allow(now time.Time) (probe bool, err error) {
	b.mu.Lock()
	b.advance(now)
	switch {
	case b.forced:
		b.mu.Unlock()
		return false, &BreakerOpenError{Dependency: b.dependency, Forced: true}
	case b.state == Closed:
		b.mu.Unlock()
		return false, nil
	case b.state == Open:
		until := b.openedAt.Add(b.cfg.OpenFor)
		b.mu.Unlock()
		return false, &BreakerOpenError{Dependency: b.dependency, Until: until}
	case b.probes >= b.cfg.HalfOpenProbes:
		b.mu.Unlock()
		return false, &BreakerOpenError{Dependency: b.dependency}
	}
	// Reserve the slot, then ask the fleet without holding the lock.
	b.probes++
	b.mu.Unlock()
	if b.limiter == nil || b.limiter.AllowProbe(b.dependency, now) {
		return true, nil
	}
	b.mu.Lock()
	b.probes--
	b.mu.Unlock()
	return false, &BreakerOpenError{Dependency: b.dependency}
}

// Record gives the breaker the class of an attempt that Allow admitted.
func (b *Breaker) Record(now time.Time, probe bool, c Class) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if probe {
		b.probes = max(b.probes-1, 0)
	}
	if c == Canceled {
		return
	}
	failed := c.failure()
	b.advance(now)
	if probe && b.state == HalfOpen {
		if failed {
			b.trip(now)
		} else {
			b.close(now)
		}
		return
	}
	if b.state != Closed {
		return
	}
	if now.Sub(b.winStart) >= b.cfg.Window {
		b.winStart, b.winTotal, b.winFailed = now, 0, 0
	}
	b.winTotal++
	if !failed {
		b.consecutive = 0
		return
	}
	b.consecutive++
	b.winFailed++
	rateTripped := b.cfg.FailureRate > 0 && b.winTotal >= b.cfg.MinRequests &&
		float64(b.winFailed) >= b.cfg.FailureRate*float64(b.winTotal)
	if b.consecutive >= b.cfg.ConsecutiveFailures || rateTripped {
		b.trip(now)
	}
}

// isOpen reports whether a call at now would be refused outright (not as a
// probe); the retrier uses it to stop retrying into an open breaker.
func (b *Breaker) isOpen(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	return b.forced || b.state == Open
}

func (b *Breaker) advance(now time.Time) {
	if b.state == Open && !now.Before(b.openedAt.Add(b.cfg.OpenFor)) {
		b.state = HalfOpen
		b.report()
	}
}

func (b *Breaker) trip(now time.Time) {
	b.state, b.openedAt = Open, now
	b.report()
}

func (b *Breaker) close(now time.Time) {
	b.state, b.consecutive = Closed, 0
	b.winStart, b.winTotal, b.winFailed = now, 0, 0
	b.report()
}

func (b *Breaker) report() {
	s := b.state
	if b.forced {
		s = ForcedOpen
	}
	if s != b.reported {
		b.reported = s
		if b.onChange != nil {
			b.onChange(s)
		}
	}
}
