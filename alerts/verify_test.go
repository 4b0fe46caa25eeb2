package alerts

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
	"github.com/stormctl/stormctl/playbooks"
)

// The verify step decides: holding keeps the lever; not holding extends
// it once, then releases it, each journaled as automation and notified.
func TestAutopilotVerify(t *testing.T) {
	rg := newRig(t, testenvOptions())
	for _, c := range []struct {
		playbook string
		held     bool
		events   []string // notifications after alert.fired
	}{
		{"verify-holds", true, []string{"action.applied"}},
		{"verify-fails", false, []string{"action.applied", "action.extended", "action.released"}},
	} {
		t.Run(c.playbook, func(t *testing.T) {
			h := newHooks(t)
			s := rg.stack(t, t.Name(), stackOptions{allow: map[string][]string{"retries": {"checkout"}}, hooks: h})
			pb, err := playbooks.ParseFile(filepath.Join("testdata", c.playbook+".yaml"), rg.cat)
			if err != nil {
				t.Fatal(err)
			}
			s.rcv.Playbook = func(string) string { return pb.Name }
			s.pilot.Playbooks = func(string) (*playbooks.Playbook, error) { return pb, nil }
			s.pilot.NoVerify = false
			if code := s.post(t, fixture(t, nil), testToken, nil); code != 200 {
				t.Fatalf("HTTP %d", code)
			}
			waitFor(t, "the verify step's outcome", func() bool {
				return s.metric(t, `stormctl_alerts_autopilot_total{outcome="kept"}`) != "0" ||
					s.metric(t, `stormctl_alerts_autopilot_total{outcome="released"}`) != "0"
			})
			l, _, _, err := s.store.Get(context.Background(), lever.Retries, "checkout->payments")
			if err != nil || (l != nil) != c.held {
				t.Fatalf("lever %+v, %v: want held %v", l, err, c.held)
			}
			es := s.entries(t)
			ext, rel := countEvents(es, journal.ActionExtended), countEvents(es, journal.ActionReleased)
			if want := map[bool][2]int{true: {0, 0}, false: {1, 1}}[c.held]; ext != want[0] || rel != want[1] {
				t.Errorf("%d extended, %d released; want %v", ext, rel, want)
			}
			for _, e := range es {
				if (e.Event == journal.ActionExtended || e.Event == journal.ActionReleased) && e.Actor != Actor {
					t.Errorf("%s by %s, want %s", e.Event, e.Actor, Actor)
				}
			}
			for _, ev := range c.events {
				waitFor(t, ev+" notification", func() bool { return h.count(ev) == 1 })
			}
		})
	}
}
