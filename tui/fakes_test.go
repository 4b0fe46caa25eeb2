package tui

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
	"github.com/stormctl/stormctl/playbooks"
	"github.com/stormctl/stormctl/queries"
)

// fakeQuerier answers each query from a table by query id: series whose
// points follow fn over the requested range.
type fakeQuerier struct {
	mu     sync.Mutex
	series map[string][]map[string]string // query id → label sets
	value  func(id string, t time.Time) float64
	stale  map[string]error  // query id → served stale with this error
	noData map[string]string // query id → no-data message
	calls  int
	gate   chan struct{} // non-nil: each RunAll waits for a receive
}

func (f *fakeQuerier) RunAll(ctx context.Context, reqs []queries.Request) []queries.Result {
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	out := make([]queries.Result, len(reqs))
	for i, r := range reqs {
		id := strings.Split(r.Key, "|")[1]
		res := queries.Result{Request: r, At: r.Range.End, Took: 12 * time.Millisecond}
		if msg, ok := f.noData[id]; ok {
			res.NoData = &queries.NoData{Message: msg}
			out[i] = res
			continue
		}
		for _, ls := range f.series[id] {
			s := queries.Series{Labels: ls}
			for t := r.Range.Start; !t.After(r.Range.End); t = t.Add(r.Range.Step) {
				s.Points = append(s.Points, queries.Point{T: t, V: f.value(id, t)})
			}
			s.Value = s.Points[len(s.Points)-1].V
			res.Series = append(res.Series, s)
		}
		if err, ok := f.stale[id]; ok {
			res.Stale, res.Err = true, err
		}
		out[i] = res
	}
	return out
}

// stormQuerier is a retry storm on checkout→payment-gateway: amplification
// rising from 1 to 4 over the last ten minutes; 12 panels in all.
func stormQuerier(now func() time.Time) *fakeQuerier {
	cp := map[string]string{"service": "checkout", "dependency": "payment-gateway"}
	sp := map[string]string{"service": "search", "dependency": "index"}
	pool := map[string]string{"service": "checkout", "pool": "gateway-connections"}
	pool2 := map[string]string{"service": "search", "pool": "index-connections"}
	return &fakeQuerier{
		series: map[string][]map[string]string{
			"amplification": {cp, sp}, "retry_ratio": {cp}, "retries_per_request": {map[string]string{"service": "checkout"}},
			"throttle_retries": {cp}, "pool_saturation": {pool, pool2}, "demanded_concurrency": {pool},
			"breaker_open_fraction": {cp}, "dependency_p99": {cp}, "edge_error_rate": {map[string]string{"service": "checkout"}},
			"replica_churn": {map[string]string{"service": "checkout"}},
		},
		value: func(id string, t time.Time) float64 {
			ago := now().Sub(t).Minutes()
			storm := min(max((10-ago)/10, 0), 1) // 0 ten minutes ago, 1 now
			switch id {
			case "amplification":
				return 1 + 3*storm
			case "retry_ratio":
				return 0.7 * storm
			case "dependency_p99":
				return 0.2 + 3.9*storm
			}
			return 0.1
		},
		stale: map[string]error{}, noData: map[string]string{},
	}
}

// fakeStore is a control plane held in memory with a change feed.
type fakeStore struct {
	mu     sync.Mutex
	levers []lever.Lever
	seen   map[string]int
	live   int
	feed   chan lever.Change
	acks   int
}

func newFakeStore(ls ...lever.Lever) *fakeStore {
	return &fakeStore{levers: ls, seen: map[string]int{}, feed: make(chan lever.Change, 16)}
}

func (s *fakeStore) Levers(context.Context) ([]lever.Lever, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]lever.Lever(nil), s.levers...), nil
}

func (s *fakeStore) Acks(context.Context) (map[string]int, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.acks++
	return s.seen, s.live, nil
}

func (s *fakeStore) Subscribe(ctx context.Context) (<-chan lever.Change, func()) {
	return s.feed, func() {}
}

// fakeJournal serves a tail and then entries sent on follow.
type fakeJournal struct {
	tail   []journal.Entry
	follow chan journal.Entry
}

func record(e journal.Entry, pos string) journal.Record {
	sealed, data, err := e.Seal("")
	if err != nil {
		panic(err)
	}
	_ = sealed
	return journal.Record{Pos: pos, Data: data}
}

func (j *fakeJournal) Tail(context.Context, int64) ([]journal.Record, error) {
	var out []journal.Record
	for i, e := range j.tail {
		out = append(out, record(e, "1-"+string(rune('0'+i))))
	}
	return out, nil
}

func (j *fakeJournal) Follow(ctx context.Context, _ string) iter.Seq2[journal.Record, error] {
	return func(yield func(journal.Record, error) bool) {
		for {
			select {
			case <-ctx.Done():
				return
			case e := <-j.follow:
				if !yield(record(e, "2-0"), nil) {
					return
				}
			}
		}
	}
}

// fakeActions plans and applies with canned verdicts and records what it
// was asked.
type fakeActions struct {
	mu       sync.Mutex
	refuse   *actions.RefusedError // plan and apply refuse with it
	applied  []actions.Spec
	released []string
	store    *fakeStore
	now      func() time.Time
}

func (a *fakeActions) result(op string, spec actions.Spec) *actions.Result {
	exp := a.now().Add(spec.TTL)
	after := &lever.Lever{Kind: lever.Kind(spec.Kind), Target: spec.Target, Value: spec.Value, ActionID: "A1",
		Actor: spec.Actor, Reason: spec.Reason, ExpiresAt: exp, Version: 1}
	res := &actions.Result{Operation: op, ActionID: "A1", Kind: lever.Kind(spec.Kind), Value: spec.Value, Actor: spec.Actor,
		Guards: []actions.GuardResult{{Guard: actions.GuardValidation, Status: actions.StatusPassed, Detail: spec.Target + " is known"},
			{Guard: actions.GuardEvidence, Status: actions.StatusPassed, Detail: "amplification crit"}},
		Targets: []actions.TargetResult{{Target: spec.Target, After: after,
			Evidence: []journal.Evidence{{Query: "amplification", Value: 4.01, Status: "crit", Threshold: "crit > 1.3"}}}}}
	switch {
	case a.refuses(spec):
		res.Guards[1] = actions.GuardResult{Guard: a.refuse.Guard, Status: actions.StatusRefused, Detail: a.refuse.Reason}
	case spec.Force:
		res.Guards[1] = actions.GuardResult{Guard: actions.GuardEvidence, Status: actions.StatusForced, Detail: "forced: no evidence"}
		res.Forced = true
	}
	return res
}

// refuses says whether the canned refusal applies to spec: --force lets
// an evidence refusal through, as the evidence guard does.
func (a *fakeActions) refuses(spec actions.Spec) bool {
	return a.refuse != nil && !(spec.Force && a.refuse.Guard == actions.GuardEvidence)
}

func (a *fakeActions) Plan(_ context.Context, spec actions.Spec) (*actions.Result, error) {
	if a.refuses(spec) {
		return a.result("plan", spec), a.refuse
	}
	return a.result("plan", spec), nil
}

func (a *fakeActions) Apply(ctx context.Context, spec actions.Spec) (*actions.Result, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ok, err := TypedConfirmer{}.Confirm(ctx, "", spec.Target)
	if err != nil || !ok {
		return nil, &actions.RefusedError{Guard: actions.GuardConfirmation, Reason: "the confirmation did not match"}
	}
	a.applied = append(a.applied, spec)
	res := a.result("apply", spec)
	if a.store != nil {
		a.store.feed <- lever.Change{Op: lever.OpSet, Kind: res.Kind, Target: spec.Target, Version: 1, Lever: res.Targets[0].After}
	}
	return res, nil
}

func (a *fakeActions) Release(_ context.Context, id, actor, reason string) (*actions.Result, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.released = append(a.released, id+" "+reason)
	return &actions.Result{Operation: "release", ActionID: id, Kind: lever.Retries}, nil
}

func (a *fakeActions) Extend(_ context.Context, id, actor, reason string, ttl time.Duration) (*actions.Result, error) {
	return &actions.Result{Operation: "extend", ActionID: id, Kind: lever.Retries}, nil
}

func (a *fakeActions) Approvals(context.Context) ([]actions.Approval, error) { return nil, nil }

// fakeLevers lets a real playbook run pull levers through fakeActions.
type fakeLevers struct{ a *fakeActions }

func (l fakeLevers) spec(r playbooks.LeverRequest) actions.Spec {
	return actions.Spec{Kind: r.Kind, Target: r.Target, Value: r.Value, TTL: r.TTL, Reason: r.Reason, Actor: r.Actor, Force: r.Force}
}

func (l fakeLevers) Plan(ctx context.Context, r playbooks.LeverRequest) (*playbooks.LeverResult, error) {
	res, err := l.a.Plan(ctx, l.spec(r))
	return &playbooks.LeverResult{ActionID: res.ActionID, Raw: res}, err
}

func (l fakeLevers) Apply(ctx context.Context, r playbooks.LeverRequest) (*playbooks.LeverResult, error) {
	res, err := l.a.Apply(ctx, l.spec(r))
	if err != nil {
		return nil, err
	}
	return &playbooks.LeverResult{ActionID: res.ActionID, After: res.Targets[0].After, Raw: res}, nil
}

func (l fakeLevers) Release(context.Context, playbooks.LeverRequest) (*playbooks.LeverResult, error) {
	return &playbooks.LeverResult{}, nil
}

func (l fakeLevers) CurrentIncident(context.Context) (string, error) { return "", nil }

// fakeMeasurer measures through a fakeQuerier's value function.
type fakeMeasurer struct {
	q   *fakeQuerier
	now func() time.Time
}

func (f fakeMeasurer) Measure(_ context.Context, r playbooks.MeasureRequest) (playbooks.Measurement, error) {
	if f.q.value == nil {
		return playbooks.Measurement{}, errors.New("no data")
	}
	v := f.q.value(r.Query, f.now())
	return playbooks.Measurement{Query: r.Query, Series: []playbooks.SeriesValue{{Labels: r.Params, Value: v}}, At: f.now()}, nil
}

type nopJournal struct{}

func (nopJournal) Append(_ context.Context, e journal.Entry) (journal.Entry, bool, error) {
	return e, false, nil
}
