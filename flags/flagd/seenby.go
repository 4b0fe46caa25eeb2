package flagd

import (
	"context"
	"strings"
	"time"

	"github.com/stormctl/stormctl/flags"
	"github.com/stormctl/stormctl/lever"
)

// ackEvery is how often the server re-acknowledges for its clients; the
// acknowledgements expire after three missed beats.
const ackEvery = 2 * time.Second

// clientInstance names a connected client in acknowledgements:
// flagd/<server>/<protocol>/<provider id or peer address>, the client's part
// reduced to name characters, since it is client input and a Redis key part.
func (s *Server) clientInstance(sub *Sub) string {
	id := strings.Map(func(r rune) rune {
		if lever.NameChar(r) {
			return r
		}
		return '_'
	}, sub.Peer)
	if len(id) > 128 {
		id = id[:128]
	}
	return "flagd/" + s.provider.InstanceID() + "/" + sub.Protocol + "/" + id
}

// acknowledge runs until ctx ends: every beat, and soon after a push, it
// acknowledges for each stream the lever versions of the snapshot it was
// last sent, so `stormctl status` counts flagd clients in "seen by" beside
// the native providers. Streams that did not identify a provider are
// served but not counted.
func (s *Server) acknowledge(ctx context.Context) {
	defer s.wg.Done()
	keys := lever.NewKeys(s.opts.Namespace)
	tick := time.NewTicker(ackEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-s.acksDue:
			select { // let the other streams of the same push send first
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
		if s.stale.Load() {
			continue // Redis is lost: the acknowledgements expire by themselves
		}
		now := time.Now()
		for _, sub := range s.hub.Subs() {
			snap := sub.sent.Load()
			if snap == nil || !sub.Identified {
				continue
			}
			actx, cancel := context.WithTimeout(ctx, time.Second)
			err := flags.Acknowledge(actx, s.opts.Redis, keys, s.clientInstance(sub), snap.Input.Versions, 3*ackEvery, now)
			cancel()
			if err != nil {
				break // the next beat tries again
			}
		}
	}
}

// sent records that sub was sent snap and asks for an acknowledgement.
func (s *Server) sent(sub *Sub, snap *Snapshot) {
	sub.sent.Store(snap)
	select {
	case s.acksDue <- struct{}{}:
	default:
	}
}

// withdraw removes a closed stream's acknowledgements.
func (s *Server) withdraw(sub *Sub) {
	if sub.sent.Load() == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = flags.Withdraw(ctx, s.opts.Redis, lever.NewKeys(s.opts.Namespace), s.clientInstance(sub))
}
