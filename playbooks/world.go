package playbooks

import (
	"context"
	"time"

	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// The runner reaches Prometheus, the guarded levers and the journal only
// through these interfaces, so its logic is tested with fakes and runs
// against real servers alike.

// Measurer evaluates a saved query now. *PromMeasurer is the real one.
type Measurer interface {
	Measure(ctx context.Context, m MeasureRequest) (Measurement, error)
}

// MeasureRequest is one evaluation of a check or wait step.
type MeasureRequest struct {
	// Key identifies the evaluation for the shared query runner (one in
	// flight per key, backoff per key).
	Key    string
	Query  string
	Params map[string]string // rendered: service, dependency, pool, window, pack
	// Window, when set, asks for Over (min_over_time or max_over_time) of
	// the query's values over the window ending now.
	Window time.Duration
	Over   string
}

// Measurement is a query's value now, one per series.
type Measurement struct {
	Query, Pack, Expr string
	Series            []SeriesValue
	// NoData explains an empty result; "" when there are series.
	NoData string
	At     time.Time
}

// SeriesValue is one series of a Measurement.
type SeriesValue struct {
	Labels map[string]string `json:"labels"`
	Value  float64           `json:"-"`
}

// Levers pulls and releases levers through every guard of actions/.
type Levers interface {
	// Plan runs the guards without changing anything.
	Plan(ctx context.Context, r LeverRequest) (*LeverResult, error)
	// Apply runs the guards and sets the lever. Its error carries the exit
	// code of a refusal (3), a pending approval (5) or a conflict (6).
	Apply(ctx context.Context, r LeverRequest) (*LeverResult, error)
	// Release releases the action holding the lever (Kind, Target); a
	// lever that is not held is no error (Released false).
	Release(ctx context.Context, r LeverRequest) (*LeverResult, error)
	// CurrentIncident is the id of the open incident actions attach to by
	// default, "" if none.
	CurrentIncident(ctx context.Context) (string, error)
}

// LeverRequest is what an action step asks for.
type LeverRequest struct {
	Kind, Target, Value string
	TTL                 time.Duration
	Reason, Actor       string
	Incident            string
	Force, Supersede    bool
	// Yes confirms in a script; without it the guards ask at a terminal.
	Yes bool
	// IdempotencyKey makes a repeated apply of the same step a no-op.
	IdempotencyKey string
	// Playbook, PlaybookVersion and Step attribute the action's own
	// journal entries to the step.
	Playbook, PlaybookVersion, Step string
}

// LeverResult is what an action step did or, planned, would do.
type LeverResult struct {
	ActionID string
	// Replayed: the idempotency key returned an earlier apply; nothing changed.
	Replayed bool
	// Released is false for a release that found no lever held.
	Released bool
	Forced   bool
	Evidence []journal.Evidence
	// Before and After are the lever before and after (nil: absent).
	Before, After *lever.Lever
	Guards        []Guard
	// Raw is the actions package's own result, printed with -o json.
	Raw any
}

// Guard is one guard's verdict in a plan or apply.
type Guard struct {
	Name, Status, Detail string
}

// Journal records entries; *journal.Writer is one.
type Journal interface {
	Append(ctx context.Context, e journal.Entry) (sealed journal.Entry, local bool, err error)
}

// Clock tells the time and sleeps; waits use it between polls.
type Clock interface {
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Sleep waits for d or until ctx ends.
func (SystemClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
