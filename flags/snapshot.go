package flags

import (
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/open-feature/go-sdk/openfeature"

	"github.com/stormctl/stormctl/lever"
)

// entry is one lever as evaluations need it: values parsed once per flag of
// its kind, metadata built once.
type entry struct {
	member  string
	version int64
	expires time.Time // zero: never
	variant string
	values  []lever.Value // indexed like lever.Table
	errs    []error
	meta    openfeature.FlagMetadata
	src     *lever.Lever
}

func newEntry(l *lever.Lever) *entry {
	e := &entry{
		member:  lever.Member(l.Kind, l.Target),
		version: l.Version,
		expires: l.ExpiresAt,
		variant: l.Value,
		values:  make([]lever.Value, len(lever.Table)),
		errs:    make([]error, len(lever.Table)),
		src:     l,
		meta: openfeature.FlagMetadata{
			"target":    l.Target,
			"action_id": l.ActionID,
			"actor":     l.Actor,
			"version":   l.Version,
		},
	}
	if !l.ExpiresAt.IsZero() {
		e.meta["expires_at"] = l.ExpiresAt.UTC().Format(time.RFC3339Nano)
	}
	if l.Incident != "" {
		e.meta["incident"] = l.Incident
	}
	for _, f := range lever.FlagsOf(l.Kind) {
		e.values[f.Index], e.errs[f.Index] = f.Parse(l.Value)
	}
	return e
}

func (e *entry) live(now time.Time) bool {
	return e.expires.IsZero() || now.Before(e.expires)
}

// snapshot is an immutable view of every lever; writers replace it whole.
type snapshot struct {
	levers map[lever.Scope]*entry
	synced bool // false until the first full sync
}

// match finds the most specific live lever of kind for a service and a
// dependency (lever.Match).
func (s *snapshot) match(kind lever.Kind, service, dependency string, now time.Time) *entry {
	e, _ := lever.Match(kind, service, dependency, func(sc lever.Scope) (*entry, bool) {
		e, ok := s.levers[sc]
		return e, ok && e.live(now)
	})
	return e
}

// nextExpiry is the earliest expiry of any lever in the snapshot.
func (s *snapshot) nextExpiry() time.Time {
	var next time.Time
	for _, e := range s.levers {
		if !e.expires.IsZero() && (next.IsZero() || e.expires.Before(next)) {
			next = e.expires
		}
	}
	return next
}

// fetched is one member as read by a full resync.
type fetched struct {
	member  string
	lever   *lever.Lever // nil: absent (expired or released)
	version int64        // from the versions hash
}

// tracker holds what the provider has applied: the snapshot it serves and,
// per member, the version it acknowledges and the local sequence number of
// the change that set it (to tell a push that raced a resync). It is guarded
// by the Provider's write lock.
type tracker struct {
	snap     *snapshot
	versions map[string]int64
	seqs     map[string]uint64
	seq      uint64
}

func newTracker() *tracker {
	return &tracker{
		snap:     &snapshot{levers: map[lever.Scope]*entry{}},
		versions: map[string]int64{},
		seqs:     map[string]uint64{},
	}
}

// applyChange applies one pushed change; it reports false when the change
// is not newer than what is already applied.
func (t *tracker) applyChange(c lever.Change) bool {
	m := lever.Member(c.Kind, c.Target)
	if v, ok := t.versions[m]; ok && c.Version <= v {
		return false
	}
	levers := maps.Clone(t.snap.levers)
	k := lever.ScopeOf(c.Kind, c.Target)
	if c.Op == lever.OpSet && c.Lever != nil {
		levers[k] = newEntry(c.Lever)
	} else {
		delete(levers, k)
	}
	t.seq++
	t.versions[m], t.seqs[m] = c.Version, t.seq
	t.snap = &snapshot{levers: levers, synced: t.snap.synced}
	return true
}

// applySync replaces the snapshot by a full read that started when the
// sequence number was since, keeping pushes that arrived during the read
// unless the read saw a newer version. It returns the members that changed.
func (t *tracker) applySync(read []fetched, since uint64) []string {
	levers := map[lever.Scope]*entry{}
	versions := map[string]int64{}
	seqs := map[string]uint64{}
	keep := func(m string) {
		versions[m], seqs[m] = t.versions[m], t.seqs[m]
		kind, target, err := lever.ParseMember(m)
		if err != nil {
			return
		}
		if e, ok := t.snap.levers[lever.ScopeOf(kind, target)]; ok && e.member == m {
			levers[lever.ScopeOf(kind, target)] = e
		}
	}
	for _, f := range read {
		v := f.version
		if f.lever != nil {
			v = f.lever.Version
		}
		if t.seqs[f.member] > since && t.versions[f.member] >= v {
			keep(f.member)
			continue
		}
		versions[f.member] = v
		if f.lever != nil {
			levers[lever.ScopeOf(f.lever.Kind, f.lever.Target)] = newEntry(f.lever)
		}
	}
	for m, s := range t.seqs {
		if _, ok := versions[m]; !ok && s > since {
			keep(m)
		}
	}
	changed := diff(t.snap.levers, levers)
	t.versions, t.seqs = versions, seqs
	t.snap = &snapshot{levers: levers, synced: true}
	return changed
}

// diff lists the members whose lever differs between two snapshots.
func diff(old, cur map[lever.Scope]*entry) []string {
	var changed []string
	for k, e := range cur {
		if o, ok := old[k]; !ok || o.version != e.version || o.member != e.member {
			changed = append(changed, e.member)
		}
	}
	for k, o := range old {
		if _, ok := cur[k]; !ok {
			changed = append(changed, o.member)
		}
	}
	return changed
}

// dropExpired removes levers expired at now and returns their members; their
// acknowledged versions stay, since expiry does not bump the version.
func (t *tracker) dropExpired(now time.Time) []string {
	var levers map[lever.Scope]*entry
	for k, e := range t.snap.levers {
		if e.live(now) {
			continue
		}
		if levers == nil {
			levers = maps.Clone(t.snap.levers)
		}
		delete(levers, k)
	}
	if levers == nil {
		return nil
	}
	changed := diff(t.snap.levers, levers)
	t.snap = &snapshot{levers: levers, synced: t.snap.synced}
	return changed
}

// decodeLever parses a lever's JSON and checks it is the lever of member.
func decodeLever(member string, raw string) (*lever.Lever, error) {
	var l lever.Lever
	if err := json.Unmarshal([]byte(raw), &l); err != nil {
		return nil, err
	}
	if lever.Member(l.Kind, l.Target) != member {
		return nil, fmt.Errorf("lever %s stored under %s", lever.Member(l.Kind, l.Target), member)
	}
	return &l, nil
}
