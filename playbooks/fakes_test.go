package playbooks

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// fakeMeasurer answers each query id with the next of its scripted
// values; the last value repeats. nil means no data.
type fakeMeasurer struct {
	values map[string][]*float64
	calls  map[string]int
	reqs   []MeasureRequest
}

func val(v float64) *float64 { return &v }

func repeat(v float64, n int) []*float64 {
	out := make([]*float64, n)
	for i := range out {
		out[i] = val(v)
	}
	return out
}

func (f *fakeMeasurer) Measure(_ context.Context, m MeasureRequest) (Measurement, error) {
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.reqs = append(f.reqs, m)
	vs, ok := f.values[m.Query]
	if !ok {
		return Measurement{}, fmt.Errorf("prometheus unreachable")
	}
	i := min(f.calls[m.Query], len(vs)-1)
	f.calls[m.Query]++
	out := Measurement{Query: m.Query, Pack: "stormctl", At: time.Unix(1_700_000_000, 0)}
	if vs[i] == nil {
		out.NoData = "metric not found"
		return out, nil
	}
	out.Series = []SeriesValue{{Labels: map[string]string{"service": m.Params["service"]}, Value: *vs[i]}}
	return out, nil
}

// fakeLevers keeps levers in a map and replays idempotency keys, like the
// real actions service; refuse makes the next apply fail with that error.
type fakeLevers struct {
	levers   map[string]*lever.Lever
	keys     map[string]*LeverResult
	applied  []LeverRequest
	released []LeverRequest
	refuse   error
	n        int
}

func newFakeLevers() *fakeLevers {
	return &fakeLevers{levers: map[string]*lever.Lever{}, keys: map[string]*LeverResult{}}
}

func (f *fakeLevers) Plan(_ context.Context, r LeverRequest) (*LeverResult, error) {
	return &LeverResult{Guards: []Guard{{Name: "evidence", Status: "passed"}}, Before: f.levers[r.Kind+":"+r.Target]}, nil
}

func (f *fakeLevers) Apply(_ context.Context, r LeverRequest) (*LeverResult, error) {
	if res, ok := f.keys[r.IdempotencyKey]; ok && r.IdempotencyKey != "" {
		again := *res
		again.Replayed = true
		return &again, nil
	}
	if err := f.refuse; err != nil {
		f.refuse = nil
		return &LeverResult{}, err
	}
	f.n++
	l := &lever.Lever{Kind: lever.Kind(r.Kind), Target: r.Target, Value: r.Value, ActionID: fmt.Sprintf("A%d", f.n),
		Actor: r.Actor, Reason: r.Reason, Incident: r.Incident, ExpiresAt: time.Unix(1_700_000_000, 0).Add(r.TTL)}
	res := &LeverResult{ActionID: l.ActionID, After: l, Before: f.levers[r.Kind+":"+r.Target], Forced: r.Force}
	f.levers[r.Kind+":"+r.Target] = l
	f.applied = append(f.applied, r)
	if r.IdempotencyKey != "" {
		f.keys[r.IdempotencyKey] = res
	}
	return res, nil
}

func (f *fakeLevers) Release(_ context.Context, r LeverRequest) (*LeverResult, error) {
	l := f.levers[r.Kind+":"+r.Target]
	if l == nil {
		return &LeverResult{}, nil
	}
	delete(f.levers, r.Kind+":"+r.Target)
	f.released = append(f.released, r)
	return &LeverResult{ActionID: l.ActionID, Released: true, Before: l}, nil
}

func (f *fakeLevers) CurrentIncident(context.Context) (string, error) { return "", nil }

// refusal is a guard refusal with its exit code.
type refusal struct{ code int }

func (r refusal) Error() string { return fmt.Sprintf("refused (exit %d)", r.code) }
func (r refusal) ExitCode() int { return r.code }

type memJournal struct {
	mu      sync.Mutex
	entries []journal.Entry
}

func (m *memJournal) Append(_ context.Context, e journal.Entry) (journal.Entry, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries = append(m.entries, e)
	return e, false, nil
}

// events is "event step" per entry, e.g. "playbook.step.passed retries-off".
func (m *memJournal) events() []string {
	out := make([]string, len(m.entries))
	for i, e := range m.entries {
		out[i] = strings.TrimSpace(string(e.Event) + " " + e.Step)
	}
	return out
}

// fakeClock advances only when slept on.
type fakeClock struct {
	now    time.Time
	sleeps []time.Duration
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return ctx.Err()
}

type world struct {
	m     *fakeMeasurer
	l     *fakeLevers
	j     *memJournal
	clock *fakeClock
}

func newWorld(values map[string][]*float64) *world {
	return &world{m: &fakeMeasurer{values: values}, l: newFakeLevers(), j: &memJournal{}, clock: &fakeClock{now: time.Unix(1_700_000_000, 0)}}
}

func (w *world) env() Env {
	return Env{Measurer: w.m, Levers: w.l, Journal: w.j, Clock: w.clock, Rand: rand.New(rand.NewPCG(1, 2))}
}

func builtin(t *testing.T, name string) *Playbook {
	t.Helper()
	set, err := Load(catalog(t))
	if err != nil {
		t.Fatal(err)
	}
	pb, err := set.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return pb
}

func newRun(t *testing.T, pb *Playbook, w *world, incident string, params map[string]string) *Run {
	t.Helper()
	r, err := NewRun(pb, RunOptions{Params: params, Incident: incident, Actor: "alice"}, w.env())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func wantCode(t *testing.T, err error, code int) {
	t.Helper()
	if got := exit.Code(err); got != code {
		t.Fatalf("exit %d, want %d: %v", got, code, err)
	}
}

func equal(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
