package promapi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"
)

// Store is the lab's in-memory sample store: float samples per series,
// appended in transactions and read through storage.Queryable by the PromQL
// engine. It replaces Prometheus's tsdb, which would link Prometheus's
// config package and with it every service-discovery and cloud client.
//
// The lab writes a few hundred series for minutes to hours of simulated
// time, so plain slices (16 bytes a sample) are enough: no chunks, no WAL,
// no compaction. Native histograms are not stored; the lab exports classic
// ones.
type Store struct {
	mu     sync.RWMutex
	series []*memSeries            // by SeriesRef-1
	byHash map[uint64][]*memSeries // labels hash → series (collisions share a slot)
	byName map[string][]*memSeries // __name__ → series, the index every selector uses
	// ooo is how far (ms) behind a series' newest sample a sample is
	// still accepted: samples of a paused-then-resumed run may arrive late
	// per series.
	ooo int64
}

// memSeries is one series. Appends in time order extend samples in place;
// an out-of-order insert copies it, so a reader holding the old slice
// (taken under the read lock) never sees it change.
type memSeries struct {
	ref     storage.SeriesRef
	lset    labels.Labels
	samples fsamples
}

// NewStore returns an empty store accepting samples up to oooWindow (ms)
// behind a series' newest one.
func NewStore(oooWindow int64) *Store {
	return &Store{byHash: map[uint64][]*memSeries{}, byName: map[string][]*memSeries{}, ooo: oooWindow}
}

// Appender starts a transaction: nothing is visible until Commit.
func (s *Store) Appender(context.Context) *Appender { return &Appender{s: s} }

// Appender buffers one transaction's samples.
type Appender struct {
	s       *Store
	pending []pendingSample
	done    bool
}

type pendingSample struct {
	ref  storage.SeriesRef
	lset labels.Labels
	t    int64
	v    float64
}

// Append adds a float sample for lset (or for ref, when it names a series of
// this store) and returns the series' reference, stable across
// transactions. The reference of a series not yet stored is 0 until Commit.
func (a *Appender) Append(ref storage.SeriesRef, lset labels.Labels, t int64, v float64) (storage.SeriesRef, error) {
	if a.done {
		return 0, errors.New("lab store: append after commit or rollback")
	}
	if ref == 0 {
		if lset.IsEmpty() {
			return 0, errors.New("lab store: empty label set")
		}
		if d, dup := lset.HasDuplicateLabelNames(); dup {
			return 0, fmt.Errorf("lab store: label name %q repeated in %s", d, lset)
		}
		a.s.mu.RLock()
		if ms := a.s.lookup(lset); ms != nil {
			ref = ms.ref
		}
		a.s.mu.RUnlock()
	}
	a.pending = append(a.pending, pendingSample{ref: ref, lset: lset, t: t, v: v})
	return ref, nil
}

// Commit stores the transaction's samples. A sample too far out of order
// fails the commit, and the samples before it stay stored, as in
// Prometheus's head (which commits sample by sample).
func (a *Appender) Commit() error {
	if a.done {
		return errors.New("lab store: commit after commit or rollback")
	}
	a.done = true
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range a.pending {
		var ms *memSeries
		if p.ref > 0 && int(p.ref) <= len(s.series) {
			ms = s.series[p.ref-1]
		} else if ms = s.lookup(p.lset); ms == nil {
			ms = s.create(p.lset)
		}
		if err := ms.add(p.t, p.v, s.ooo); err != nil {
			return fmt.Errorf("lab store: %s at %d: %w", ms.lset, p.t, err)
		}
	}
	return nil
}

// Rollback drops the transaction.
func (a *Appender) Rollback() error {
	a.done, a.pending = true, nil
	return nil
}

// lookup finds the series of lset; the caller holds a lock.
func (s *Store) lookup(lset labels.Labels) *memSeries {
	for _, ms := range s.byHash[lset.Hash()] {
		if labels.Equal(ms.lset, lset) {
			return ms
		}
	}
	return nil
}

// create adds a series; the caller holds the write lock.
func (s *Store) create(lset labels.Labels) *memSeries {
	ms := &memSeries{ref: storage.SeriesRef(len(s.series) + 1), lset: lset.Copy()}
	s.series = append(s.series, ms)
	h := lset.Hash()
	s.byHash[h] = append(s.byHash[h], ms)
	name := lset.Get(model.MetricNameLabel)
	s.byName[name] = append(s.byName[name], ms)
	return ms
}

// add stores one sample in time order.
func (ms *memSeries) add(t int64, v float64, ooo int64) error {
	ss, n := ms.samples, len(ms.samples)
	if n == 0 || t > ss[n-1].t {
		ms.samples = append(ss, fsample{t, v})
		return nil
	}
	if t < ss[n-1].t-ooo {
		return storage.ErrTooOldSample
	}
	i := sort.Search(n, func(i int) bool { return ss[i].t >= t })
	if i < n && ss[i].t == t {
		if sameValue(ss[i].f, v) {
			return nil
		}
		return storage.ErrDuplicateSampleForTimestamp
	}
	cp := make(fsamples, 0, n+1)
	ms.samples = append(append(append(cp, ss[:i]...), fsample{t, v}), ss[i:]...)
	return nil
}

// Querier returns a querier over [mint, maxt] (ms, inclusive).
func (s *Store) Querier(mint, maxt int64) (storage.Querier, error) {
	return &querier{s: s, mint: mint, maxt: maxt}, nil
}

type querier struct {
	s          *Store
	mint, maxt int64
}

// matching returns the series matching every matcher that hold a sample in
// [mint, maxt], each with its samples in that range, sorted by labels.
func (q *querier) matching(mint, maxt int64, ms []*labels.Matcher) []*memSeries {
	q.s.mu.RLock()
	defer q.s.mu.RUnlock()
	cands := q.s.series
	for _, m := range ms {
		if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
			cands = q.s.byName[m.Value]
			break
		}
	}
	var out []*memSeries
	for _, c := range cands {
		if !matchesAll(c.lset, ms) {
			continue
		}
		ss := c.samples
		lo := sort.Search(len(ss), func(i int) bool { return ss[i].t >= mint })
		hi := sort.Search(len(ss), func(i int) bool { return ss[i].t > maxt })
		if lo >= hi {
			continue
		}
		out = append(out, &memSeries{ref: c.ref, lset: c.lset, samples: ss[lo:hi:hi]})
	}
	slices.SortFunc(out, func(a, b *memSeries) int { return labels.Compare(a.lset, b.lset) })
	return out
}

func matchesAll(lset labels.Labels, ms []*labels.Matcher) bool {
	for _, m := range ms {
		if !m.Matches(lset.Get(m.Name)) {
			return false
		}
	}
	return true
}

// Select returns the matching series with their samples between the hints'
// start and end (the querier's range without hints), always sorted.
func (q *querier) Select(ctx context.Context, _ bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	if err := ctx.Err(); err != nil {
		return storage.ErrSeriesSet(err)
	}
	mint, maxt := q.mint, q.maxt
	if hints != nil {
		mint, maxt = max(mint, hints.Start), min(maxt, hints.End)
	}
	found := q.matching(mint, maxt, ms)
	if hints != nil && hints.Limit > 0 && len(found) > hints.Limit {
		found = found[:hints.Limit]
	}
	return &seriesSet{list: found, i: -1}
}

// LabelValues returns the sorted values of name over the matching series.
func (q *querier) LabelValues(ctx context.Context, name string, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	seen := map[string]struct{}{}
	for _, s := range q.matching(q.mint, q.maxt, ms) {
		if v := s.lset.Get(name); v != "" {
			seen[v] = struct{}{}
		}
	}
	return limited(seen, hints), nil, ctx.Err()
}

// LabelNames returns the sorted label names of the matching series.
func (q *querier) LabelNames(ctx context.Context, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	seen := map[string]struct{}{}
	for _, s := range q.matching(q.mint, q.maxt, ms) {
		s.lset.Range(func(l labels.Label) { seen[l.Name] = struct{}{} })
	}
	return limited(seen, hints), nil, ctx.Err()
}

func limited(set map[string]struct{}, hints *storage.LabelHints) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	if hints != nil && hints.Limit > 0 && len(out) > hints.Limit {
		out = out[:hints.Limit]
	}
	return out
}

func (q *querier) Close() error { return nil }

// MaxTime returns the newest sample's timestamp (ms), or math.MinInt64
// when the store is empty.
func (s *Store) MaxTime() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	newest := int64(minInt64)
	for _, ms := range s.series {
		if n := len(ms.samples); n > 0 && ms.samples[n-1].t > newest {
			newest = ms.samples[n-1].t
		}
	}
	return newest
}
