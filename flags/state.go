package flags

import (
	"maps"
	"time"

	"github.com/stormctl/stormctl/lever"
)

// State is what a provider has applied, for readers that serve the levers
// onwards (the flagd server) rather than evaluate them.
type State struct {
	// Levers are the levers live at the time of the call, in lever.Sort order.
	Levers []lever.Lever
	// Versions is the version applied per lever member, releases included.
	Versions map[string]int64
	// Synced is false until the first full read of Redis.
	Synced bool
	// Stale is true while Redis has been unreachable past the StaleAfter
	// grace period: fail-safe values apply.
	Stale bool
	// NextExpiry is the earliest expiry of a live lever (zero: none).
	NextExpiry time.Time
}

// State returns a copy of what the provider has applied, at the provider's
// clock. Its change events (EventChannel) say when to read it again.
func (p *Provider) State() State {
	p.mu.Lock()
	snap, versions := p.track.snap, maps.Clone(p.track.versions)
	p.mu.Unlock()
	now := p.opts.now()
	st := State{Versions: versions, Synced: snap.synced, Stale: p.mode.Load() == modeStale}
	for _, e := range snap.levers {
		if !e.live(now) || e.src == nil {
			continue
		}
		st.Levers = append(st.Levers, *e.src)
		if !e.expires.IsZero() && (st.NextExpiry.IsZero() || e.expires.Before(st.NextExpiry)) {
			st.NextExpiry = e.expires
		}
	}
	lever.Sort(st.Levers)
	return st
}
