package actions

import (
	"context"
	"errors"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// fakeCP is an in-memory control plane for the guard logic's unit tests;
// the real store is exercised by the integration tests.
type fakeCP struct {
	mu       sync.Mutex
	levers   map[string]*lever.Lever
	versions map[string]int64
	records  map[string]map[string]string
	idem     map[string]controlplane.Result
	rate     controlplane.RateStatus // what a snapshot reads
	// rateAtWrite is what the apply script finds: the budget may be spent
	// between the read and the write.
	rateAtWrite controlplane.RateStatus
	takes       int
	writes      int
	journal     []journal.Entry
	// identity is who the fake server says we are: a shared user unless
	// a test binds one.
	identity controlplane.Identity
}

func (f *fakeCP) Identity(context.Context) (controlplane.Identity, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.identity
	if id.User == "" && !id.ACL {
		id.Shared = true
	}
	return id, nil
}

func newFakeCP() *fakeCP {
	return &fakeCP{levers: map[string]*lever.Lever{}, versions: map[string]int64{},
		records: map[string]map[string]string{}, idem: map[string]controlplane.Result{}}
}

func (f *fakeCP) Get(_ context.Context, k lever.Kind, t string) (*lever.Lever, int64, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := lever.Member(k, t)
	return f.levers[m], f.versions[m], "head", nil
}

func (f *fakeCP) Snapshot(_ context.Context, r controlplane.SnapshotRequest) (*controlplane.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	snap := &controlplane.Snapshot{Levers: map[string]controlplane.LeverRead{}, Head: "head", Replays: map[string]*controlplane.Result{}}
	for _, t := range r.Targets {
		m := lever.Member(r.Kind, t)
		snap.Levers[t] = controlplane.LeverRead{Lever: f.levers[m], Version: f.versions[m]}
	}
	if r.Rate != nil {
		snap.Rate = f.rate
	}
	for _, k := range r.IdempotencyKeys {
		if res, ok := f.idem[k]; ok && k != "" {
			res.Replayed = true
			snap.Replays[k] = &res
		}
	}
	for _, ref := range r.Records {
		m := map[string]string{}
		for id, v := range f.records[ref.Collection] {
			if ref.ID == "" || ref.ID == id {
				m[id] = v
			}
		}
		snap.Records = append(snap.Records, m)
	}
	return snap, nil
}

func (f *fakeCP) Levers(context.Context) ([]lever.Lever, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []lever.Lever
	for _, l := range f.levers {
		out = append(out, *l)
	}
	slices.SortFunc(out, func(a, b lever.Lever) int { return len(a.Target) - len(b.Target) })
	return out, nil
}

func (f *fakeCP) Apply(_ context.Context, r controlplane.ApplyRequest) (controlplane.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if res, ok := f.idem[r.IdempotencyKey]; ok && r.IdempotencyKey != "" {
		res.Replayed = true
		return res, nil
	}
	m := lever.Member(r.Lever.Kind, r.Lever.Target)
	if f.versions[m] != r.Expected {
		return controlplane.Result{}, &controlplane.ConflictError{Kind: r.Lever.Kind, Target: r.Lever.Target}
	}
	if r.Rate != nil {
		if f.rateAtWrite.Limited != "" {
			return controlplane.Result{}, &controlplane.RateLimitedError{Actor: r.Rate.Actor, Status: f.rateAtWrite}
		}
		f.takes++
	}
	l := r.Lever
	l.Version, l.Previous = r.Expected+1, r.Current
	f.levers[m], f.versions[m] = &l, l.Version
	f.writes++
	e := r.Entry
	e.Event, e.ID, e.Kind, e.Target, e.Value = journal.ActionApplied, journal.NewID(), string(l.Kind), l.Target, l.Value
	f.journal = append(f.journal, e)
	res := controlplane.Result{Lever: &l, Version: l.Version, Entry: e}
	if r.IdempotencyKey != "" {
		f.idem[r.IdempotencyKey] = res
	}
	return res, nil
}

func (f *fakeCP) update(c *lever.Lever, next *lever.Lever, e journal.Entry, ev journal.Event) (controlplane.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := lever.Member(c.Kind, c.Target)
	f.versions[m]++
	if next == nil {
		delete(f.levers, m)
	} else {
		next.Version = f.versions[m]
		f.levers[m] = next
	}
	f.writes++
	e.Event, e.ID = ev, journal.NewID()
	f.journal = append(f.journal, e)
	return controlplane.Result{Lever: next, Version: f.versions[m], Entry: e}, nil
}

func (f *fakeCP) Release(_ context.Context, r controlplane.ReleaseRequest) (controlplane.Result, error) {
	return f.update(r.Current, r.Current.Previous, r.Entry, journal.ActionReleased)
}

func (f *fakeCP) Extend(_ context.Context, r controlplane.ExtendRequest) (controlplane.Result, error) {
	next := *r.Current
	next.ExpiresAt = r.ExpiresAt
	return f.update(r.Current, &next, r.Entry, journal.ActionExtended)
}

func (f *fakeCP) SwapRecord(_ context.Context, coll, id, old, value string, e journal.Entry) (journal.Entry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.records[coll] == nil {
		f.records[coll] = map[string]string{}
	}
	if f.records[coll][id] != old {
		return journal.Entry{}, &controlplane.RecordChangedError{Collection: coll, ID: id, Current: f.records[coll][id]}
	}
	f.records[coll][id] = value
	e.ID = journal.NewID()
	f.journal = append(f.journal, e)
	return e, nil
}

func (f *fakeCP) Record(_ context.Context, coll, id string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.records[coll][id], nil
}

func (f *fakeCP) Records(_ context.Context, coll string) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for k, v := range f.records[coll] {
		out[k] = v
	}
	return out, nil
}

func (f *fakeCP) Journal(context.Context) iter.Seq2[journal.Entry, error] {
	return func(yield func(journal.Entry, error) bool) {
		for _, e := range f.entries() {
			if !yield(e, nil) {
				return
			}
		}
	}
}

// Append makes the fake its own journal writer.
func (f *fakeCP) Append(_ context.Context, e journal.Entry) (journal.Entry, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e.ID = journal.NewID()
	f.journal = append(f.journal, e)
	return e, false, nil
}

func (f *fakeCP) entries() []journal.Entry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.journal)
}

// fakeEvidence answers from a table: query|target → value and status.
type fakeEvidence struct {
	values map[string]journal.Evidence
	err    error
}

func (f fakeEvidence) Measure(_ context.Context, id string, t Target) (journal.Evidence, error) {
	if f.err != nil {
		return journal.Evidence{Query: id}, f.err
	}
	if ev, ok := f.values[id+"|"+t.Name]; ok {
		ev.Query = id
		return ev, nil
	}
	return journal.Evidence{Query: id, Status: StatusNoData}, nil
}

type fakeLabels struct {
	values map[string][]string
	err    error
}

func (f fakeLabels) LabelValues(_ context.Context, label string) ([]string, error) {
	return f.values[label], f.err
}

type fakeClock struct{ t time.Time }

func (c fakeClock) Now() time.Time { return c.t }

// typed confirms when the person "types" text.
type typed struct{ text string }

func (c typed) Confirm(_ context.Context, _, want string) (bool, error) {
	if c.text == "" {
		return false, errors.New("EOF")
	}
	return c.text == want, nil
}

// world is a Service over fakes: checkout→payments is storming, ledger→db
// is healthy.
func world(cp *fakeCP, p config.Policy) *Service {
	pol, err := NewPolicy(p, nil)
	if err != nil {
		panic(err)
	}
	return &Service{
		Store: cp, Journal: cp, Policy: pol,
		Inventory: NewNames(config.Inventory{}, nil, fakeLabels{values: map[string][]string{
			"service": {"checkout", "ledger", "billing"}, "dependency": {"payments", "db", "tax"}}}),
		Evidence: fakeEvidence{values: map[string]journal.Evidence{
			"amplification|checkout->payments": {Value: 4, Status: "crit", Threshold: "warn > 1.2, crit > 1.3"},
			"amplification|ledger->db":         {Value: 1, Status: "ok"},
			"amplification|checkout":           {Value: 4, Status: "crit"},
			"dependency_p99|payments":          {Value: 2.5, Status: "crit"},
		}},
		Clock: fakeClock{time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)},
	}
}

func okSpec() Spec {
	return Spec{Kind: "retries", Target: "checkout->payments", Value: "off", TTL: 10 * time.Minute,
		Reason: "amplification 4x", Actor: "alice", Yes: true}
}
