package flags

import (
	"testing"
	"time"

	"github.com/stormctl/stormctl/lever"
)

func shedLever(target, value string, version int64) *lever.Lever {
	return &lever.Lever{Kind: lever.Shed, Target: target, Value: value, Version: version,
		ExpiresAt: time.Now().Add(time.Hour)}
}

func set(l *lever.Lever) lever.Change {
	return lever.Change{Op: lever.OpSet, Kind: l.Kind, Target: l.Target, Version: l.Version, Lever: l}
}

func shedOf(t *tracker, service string) string {
	if e := t.snap.match(lever.Shed, service, "", time.Now()); e != nil {
		return e.variant
	}
	return ""
}

func TestChangesApplyInVersionOrder(t *testing.T) {
	tr := newTracker()
	if !tr.applyChange(set(shedLever("a", "20", 2))) {
		t.Fatal("first change refused")
	}
	if tr.applyChange(set(shedLever("a", "10", 1))) || tr.applyChange(set(shedLever("a", "10", 2))) {
		t.Error("an older or repeated change was applied")
	}
	del := lever.Change{Op: lever.OpDel, Kind: lever.Shed, Target: "a", Version: 3}
	if !tr.applyChange(del) || shedOf(tr, "a") != "" {
		t.Error("release not applied")
	}
	if tr.applyChange(set(shedLever("a", "20", 2))) || shedOf(tr, "a") != "" {
		t.Error("a late set resurrected a released lever")
	}
}

// A resync reads Redis while pushes keep arriving: what the read missed
// must survive it, and what it saw newer must win.
func TestResyncKeepsRacingPushes(t *testing.T) {
	tr := newTracker()
	tr.applyChange(set(shedLever("old", "10", 1)))
	tr.applyChange(set(shedLever("gone", "10", 1)))
	since := tr.seq
	// Pushed while the read was in flight.
	tr.applyChange(set(shedLever("new", "30", 1)))
	tr.applyChange(set(shedLever("old", "15", 2)))
	tr.applyChange(set(shedLever("both", "40", 1)))
	read := []fetched{
		{member: "shed:old", lever: shedLever("old", "10", 1), version: 1},   // read before the push of v2
		{member: "shed:both", lever: shedLever("both", "45", 2), version: 2}, // read after a later write
		{member: "shed:gone", version: 2},                                    // released, message lost
	}
	changed := tr.applySync(read, since)
	for svc, want := range map[string]string{"old": "15", "new": "30", "both": "45", "gone": ""} {
		if got := shedOf(tr, svc); got != want {
			t.Errorf("shed %s = %q, want %q", svc, got, want)
		}
	}
	if tr.versions["shed:gone"] != 2 || tr.versions["shed:both"] != 2 || tr.versions["shed:old"] != 2 {
		t.Errorf("acknowledged versions %v", tr.versions)
	}
	if len(changed) != 2 { // both (v1→v2) and gone
		t.Errorf("changed = %v", changed)
	}
	// A later resync that no longer lists a member drops it.
	tr.applySync(read[:2], tr.seq)
	if got := shedOf(tr, "new"); got != "" {
		t.Errorf("a member missing from the index survived a clean resync: %q", got)
	}
}

func TestMatchMostSpecificFirst(t *testing.T) {
	tr := newTracker()
	for _, l := range []*lever.Lever{
		{Kind: lever.Breaker, Target: "db", Value: "open", Version: 1},
		{Kind: lever.Breaker, Target: "api->cache", Value: "open", Version: 1},
		{Kind: lever.Retries, Target: "api", Value: "cap:2", Version: 1},
		{Kind: lever.Retries, Target: "api->db", Value: "off", Version: 1},
	} {
		tr.applyChange(set(l))
	}
	now := time.Now()
	cases := []struct {
		kind         lever.Kind
		service, dep string
		want         string
		wantNoMatch  bool
	}{
		{lever.Retries, "api", "db", "api->db", false},
		{lever.Retries, "api", "cache", "api", false},
		{lever.Retries, "", "db", "", true},
		{lever.Breaker, "api", "db", "db", false},
		{lever.Breaker, "api", "cache", "api->cache", false},
		{lever.Breaker, "web", "cache", "", true},
		{lever.Breaker, "db", "", "", true},
	}
	for _, tc := range cases {
		e := tr.snap.match(tc.kind, tc.service, tc.dep, now)
		if tc.wantNoMatch != (e == nil) || (e != nil && e.meta["target"] != tc.want) {
			t.Errorf("match(%s, %q, %q) = %v, want %q", tc.kind, tc.service, tc.dep, e, tc.want)
		}
	}
}
