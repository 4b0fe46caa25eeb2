package flagd

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormctl/stormctl/lever"
)

// Snapshot is one validated lever state with its configurations, rendered
// per selector on first use and cached.
type Snapshot struct {
	// Version identifies the lever state (Version(Input)).
	Version string
	// Input is what was rendered.
	Input Input
	// Changed lists the flag keys whose rules changed since the previous
	// snapshot (every key for the first).
	Changed []string
	// At is when the snapshot was published.
	At time.Time
	// PrevVersion is the version of the snapshot it replaced.
	PrevVersion string

	validator *Validator
	mu        sync.Mutex
	configs   map[Selector]rendered
}

type rendered struct {
	raw []byte
	err error
}

// Config is the validated configuration for sel.
func (s *Snapshot) Config(sel Selector) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.configs[sel]; ok {
		return r.raw, r.err
	}
	raw := Render(s.Input, sel).Marshal()
	err := s.validator.Validate(raw, s.Input, sel)
	if err != nil {
		raw, err = nil, fmt.Errorf("snapshot %s for selector %q not sent: %w", s.Version, sel, err)
	}
	if len(s.configs) < maxCachedSelectors {
		s.configs[sel] = rendered{raw, err}
	}
	return raw, err
}

// maxCachedSelectors bounds the per-snapshot cache: selectors are client
// input.
const maxCachedSelectors = 1024

// Hub holds the current snapshot and wakes the streams that follow it.
// Publishing never waits for a stream: each has a one-slot wake-up channel,
// and a slow stream simply skips to the newest snapshot when it next reads.
type Hub struct {
	mu    sync.Mutex
	cur   *Snapshot
	subs  map[*Sub]struct{}
	ready chan struct{}
	limit int
}

// NewHub returns a hub that admits at most limit streams at once.
func NewHub(limit int) *Hub {
	return &Hub{subs: map[*Sub]struct{}{}, ready: make(chan struct{}), limit: limit}
}

// Sub is one stream following the hub.
type Sub struct {
	wake     chan struct{}
	Protocol string
	Peer     string // the client's provider id, else its address
	// Identified: the client named itself as flagd's clients do (a
	// provider id or a selector). Only these count in "seen by": a bare
	// stream proves no provider behind it.
	Identified bool
	sent       atomic.Pointer[Snapshot]
}

// Wake is signalled whenever a newer snapshot is published.
func (s *Sub) Wake() <-chan struct{} { return s.wake }

// ErrTooManyStreams refuses a stream past the limit.
var ErrTooManyStreams = fmt.Errorf("too many open streams on this server")

// Subscribe adds a stream; call the returned function when it ends.
func (h *Hub) Subscribe(protocol, peer string, identified bool) (*Sub, func(), error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.limit > 0 && len(h.subs) >= h.limit {
		return nil, nil, ErrTooManyStreams
	}
	s := &Sub{wake: make(chan struct{}, 1), Protocol: protocol, Peer: peer, Identified: identified}
	h.subs[s] = struct{}{}
	return s, func() {
		h.mu.Lock()
		delete(h.subs, s)
		h.mu.Unlock()
	}, nil
}

// Streams counts the open streams per protocol.
func (h *Hub) Streams() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]int{}
	for s := range h.subs {
		out[s.Protocol]++
	}
	return out
}

// Subs lists the open streams.
func (h *Hub) Subs() []*Sub {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*Sub, 0, len(h.subs))
	for s := range h.subs {
		out = append(out, s)
	}
	return out
}

// Current is the newest snapshot, nil before the first.
func (h *Hub) Current() *Snapshot {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur
}

// Ready is closed once the first snapshot is published.
func (h *Hub) Ready() <-chan struct{} { return h.ready }

// WaitFirst waits for the first snapshot or for ctx to end.
func (h *Hub) WaitFirst(ctx context.Context) (*Snapshot, error) {
	select {
	case <-h.ready:
		return h.Current(), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Publish makes in the current snapshot if its version differs from the
// current one and its full configuration validates; before wakes the
// streams (the evaluators load it first, so a client told of a change reads
// the new values). It returns the new snapshot, or nil when nothing
// changed. One goroutine publishes.
func (h *Hub) Publish(in Input, v *Validator, now time.Time, before func(*Snapshot) error) (*Snapshot, error) {
	ver := Version(in)
	prev := h.Current()
	if prev != nil && prev.Version == ver && prev.Input.Stale == in.Stale {
		return nil, nil
	}
	s := &Snapshot{Version: ver, Input: in, At: now, validator: v, configs: map[Selector]rendered{}}
	if _, err := s.Config(Selector{}); err != nil {
		return nil, err
	}
	s.Changed = changedKeys(prev, s)
	if prev != nil {
		s.PrevVersion = prev.Version
	}
	if before != nil {
		if err := before(s); err != nil {
			return nil, err
		}
	}
	h.mu.Lock()
	h.cur = s
	first := prev == nil
	for sub := range h.subs {
		select {
		case sub.wake <- struct{}{}:
		default:
		}
	}
	h.mu.Unlock()
	if first {
		close(h.ready)
	}
	return s, nil
}

// ChangedSince lists the flag keys that changed since the snapshot a
// stream last sent (nil: every key), for streams that skipped snapshots.
func (s *Snapshot) ChangedSince(last *Snapshot) []string {
	if last != nil && last.Version == s.PrevVersion {
		return s.Changed
	}
	return changedKeys(last, s)
}

// changedKeys lists the flags whose full rendering differs between two
// snapshots.
func changedKeys(prev, cur *Snapshot) []string {
	var keys []string
	curCfg := Render(cur.Input, Selector{})
	var prevCfg *Config
	if prev != nil {
		prevCfg = Render(prev.Input, Selector{})
	}
	for _, f := range lever.Table {
		if prevCfg == nil || !sameFlag(prevCfg.Flags[f.Key], curCfg.Flags[f.Key]) {
			keys = append(keys, f.Key)
		}
	}
	slices.Sort(keys)
	return keys
}

func sameFlag(a, b Flag) bool {
	c1, c2 := &Config{Flags: map[string]Flag{"f": a}}, &Config{Flags: map[string]Flag{"f": b}}
	return string(c1.Marshal()) == string(c2.Marshal())
}
