package flags

import (
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/open-feature/go-sdk/openfeature"
	"github.com/stormctl/stormctl/controlplane"
)

// leverKey addresses a lever by what an evaluation context can name, so a
// lookup needs no string building: a bare breaker target is a dependency,
// any other bare target a service.
type leverKey struct {
	kind                controlplane.Kind
	service, dependency string
}

func keyOf(kind controlplane.Kind, target string) leverKey {
	s, d := controlplane.SplitTarget(target)
	if kind == controlplane.Breaker && d == "" {
		s, d = "", s
	}
	return leverKey{kind, s, d}
}

// entry is one lever as evaluations need it: values parsed once per flag of
// its kind, metadata built once.
type entry struct {
	member  string
	version int64
	expires time.Time // zero: never
	variant string
	values  []value // indexed like Table
	errs    []error
	meta    openfeature.FlagMetadata
}

func newEntry(l *controlplane.Lever) *entry {
	e := &entry{
		member:  controlplane.Member(l.Kind, l.Target),
		version: l.Version,
		expires: l.ExpiresAt,
		variant: l.Value,
		values:  make([]value, len(Table)),
		errs:    make([]error, len(Table)),
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
	for _, f := range byKind[l.Kind] {
		e.values[f.index], e.errs[f.index] = f.parse(l.Value)
	}
	return e
}

func (e *entry) live(now time.Time) bool {
	return e.expires.IsZero() || now.Before(e.expires)
}

// snapshot is an immutable view of every lever; writers replace it whole.
type snapshot struct {
	levers map[leverKey]*entry
	synced bool // false until the first full sync
}

// match finds the most specific live lever of kind for a service and a
// dependency: service->dependency, then service, then dependency.
func (s *snapshot) match(kind controlplane.Kind, service, dependency string, now time.Time) *entry {
	try := func(k leverKey) *entry {
		if e, ok := s.levers[k]; ok && e.live(now) {
			return e
		}
		return nil
	}
	if service != "" && dependency != "" {
		if e := try(leverKey{kind, service, dependency}); e != nil {
			return e
		}
	}
	if service != "" {
		if e := try(leverKey{kind, service, ""}); e != nil {
			return e
		}
	}
	if dependency != "" {
		return try(leverKey{kind, "", dependency})
	}
	return nil
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
	lever   *controlplane.Lever // nil: absent (expired or released)
	version int64               // from the versions hash
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
		snap:     &snapshot{levers: map[leverKey]*entry{}},
		versions: map[string]int64{},
		seqs:     map[string]uint64{},
	}
}

// applyChange applies one pushed change; it reports false when the change
// is not newer than what is already applied.
func (t *tracker) applyChange(c controlplane.Change) bool {
	m := controlplane.Member(c.Kind, c.Target)
	if v, ok := t.versions[m]; ok && c.Version <= v {
		return false
	}
	levers := maps.Clone(t.snap.levers)
	k := keyOf(c.Kind, c.Target)
	if c.Op == controlplane.OpSet && c.Lever != nil {
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
	levers := map[leverKey]*entry{}
	versions := map[string]int64{}
	seqs := map[string]uint64{}
	keep := func(m string) {
		versions[m], seqs[m] = t.versions[m], t.seqs[m]
		kind, target, err := controlplane.ParseMember(m)
		if err != nil {
			return
		}
		if e, ok := t.snap.levers[keyOf(kind, target)]; ok && e.member == m {
			levers[keyOf(kind, target)] = e
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
			levers[keyOf(f.lever.Kind, f.lever.Target)] = newEntry(f.lever)
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
func diff(old, cur map[leverKey]*entry) []string {
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
	var levers map[leverKey]*entry
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
func decodeLever(member string, raw string) (*controlplane.Lever, error) {
	var l controlplane.Lever
	if err := json.Unmarshal([]byte(raw), &l); err != nil {
		return nil, err
	}
	if controlplane.Member(l.Kind, l.Target) != member {
		return nil, fmt.Errorf("lever %s stored under %s", controlplane.Member(l.Kind, l.Target), member)
	}
	return &l, nil
}
