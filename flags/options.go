package flags

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/stormctl/stormctl/lever"
)

// Defaults of the provider's options.
const (
	DefaultResyncInterval = 30 * time.Second
	DefaultStaleAfter     = 2 * time.Second
	DefaultErrorAfter     = 30 * time.Second
	DefaultHeartbeat      = 2 * time.Second
)

// Option configures a Provider.
type Option func(*options)

// positive sets the duration field to d when d > 0, keeping the default
// otherwise.
func positive(d time.Duration, field func(*options) *time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			*field(o) = d
		}
	}
}

type options struct {
	keys       lever.Keys
	now        func() time.Time
	resync     time.Duration
	staleAfter time.Duration
	errorAfter time.Duration
	heartbeat  time.Duration
	instance   string
	failSafe   map[string]any
	log        *slog.Logger
	push       bool // false only for the polling baseline of the benchmarks
}

func defaultOptions() options {
	return options{
		keys:       lever.NewKeys(""),
		now:        time.Now,
		resync:     DefaultResyncInterval,
		staleAfter: DefaultStaleAfter,
		errorAfter: DefaultErrorAfter,
		heartbeat:  DefaultHeartbeat,
		instance:   defaultInstanceID(),
		failSafe:   map[string]any{},
		log:        slog.Default(),
		push:       true,
	}
}

// Namespace selects the control-plane namespace (controlplane.NewKeys).
func Namespace(ns string) Option {
	return func(o *options) { o.keys = lever.NewKeys(ns) }
}

// Clock sets the wall clock used to decide whether a lever has expired and
// to stamp heartbeats; tests pass a fake one.
func Clock(now func() time.Time) Option {
	return func(o *options) {
		if now != nil {
			o.now = now
		}
	}
}

// ResyncInterval sets the mean interval of the full resync that repairs
// missed changes; each wait is jittered by ±20% so a fleet does not resync in
// lockstep.
func ResyncInterval(d time.Duration) Option {
	return positive(d, func(o *options) *time.Duration { return &o.resync })
}

// StaleAfter sets how long Redis may be unreachable before the provider
// emits PROVIDER_STALE and applies fail-safe values; until then it serves
// its snapshot with reason CACHED.
func StaleAfter(d time.Duration) Option {
	return positive(d, func(o *options) *time.Duration { return &o.staleAfter })
}

// ErrorAfter sets how long Redis may be unreachable before the provider
// emits PROVIDER_ERROR. It also bounds how long Init waits for the first sync.
func ErrorAfter(d time.Duration) Option {
	return positive(d, func(o *options) *time.Duration { return &o.errorAfter })
}

// Heartbeat sets how often the instance announces itself and refreshes its
// acknowledgements; they expire after three heartbeats without one.
func Heartbeat(d time.Duration) Option {
	return positive(d, func(o *options) *time.Duration { return &o.heartbeat })
}

// InstanceID names this provider instance in acknowledgements (default
// hostname-pid-random).
func InstanceID(id string) Option {
	return func(o *options) {
		if id != "" {
			o.instance = id
		}
	}
}

// FailSafe sets the value served for flag while Redis has been unreachable
// past the stale grace period, instead of the last snapshot, e.g.
// FailSafe(DegradedMode, "on"). The value must have the flag's type (bool,
// int or int64, string); Init fails otherwise.
func FailSafe(flag string, v any) Option {
	return func(o *options) { o.failSafe[flag] = v }
}

// Logger sets the logger for connection and resync problems.
func Logger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.log = l
		}
	}
}

// failSafes validates the fail-safe options into a table indexed like lever.Table.
func (o *options) failSafes() ([]*lever.Value, error) {
	out := make([]*lever.Value, len(lever.Table))
	for key, x := range o.failSafe {
		f, ok := lever.Lookup(key)
		if !ok {
			return nil, fmt.Errorf("fail-safe for unknown flag %q", key)
		}
		v, ok := f.Coerce(x)
		if !ok {
			return nil, fmt.Errorf("fail-safe for %s: %T is not a %s", key, x, f.Type)
		}
		out[f.Index] = &v
	}
	return out, nil
}

func defaultInstanceID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}
