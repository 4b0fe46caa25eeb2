package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stormctl/stormctl/lever"
)

// SnapshotRequest names everything a guarded action reads before it
// writes, so that Snapshot reads it in one round trip.
type SnapshotRequest struct {
	// Kind and Targets are the levers to read, with their versions.
	Kind    lever.Kind
	Targets []string
	// Rate, if set, reads that budget (nothing is counted).
	Rate *RateCharge
	// IdempotencyKeys are looked up for a replay; "" is skipped.
	IdempotencyKeys []string
	// Records are records to read beside the levers.
	Records []RecordRef
}

// RecordRef names one record, or with ID "" a whole collection.
type RecordRef struct{ Collection, ID string }

// LeverRead is a lever as read: nil when absent, and the version it is at.
type LeverRead struct {
	Lever   *lever.Lever
	Version int64
}

// Snapshot is what a SnapshotRequest read, all at one moment.
type Snapshot struct {
	// Levers holds every target's lever, by target.
	Levers map[string]LeverRead
	// Head is the journal head, for the write that follows.
	Head string
	// Rate is the budget read; zero without a SnapshotRequest.Rate.
	Rate RateStatus
	// Replays holds the first result of each idempotency key that has one.
	Replays map[string]*Result
	// Records holds, for each RecordRef in order, id → JSON of what exists.
	Records []map[string]string
}

// snapshotCmds are the commands of one snapshot pipeline.
type snapshotCmds struct {
	due      *redis.StringSliceCmd
	head     *redis.StringCmd
	levers   []*redis.StringCmd
	versions *redis.SliceCmd
	counts   []*redis.StringCmd          // actor, overall
	ttls     []*redis.DurationCmd        // actor, overall
	replays  map[string]*redis.StringCmd // by key
	records  []recordCmd
}

// recordCmd reads a whole collection (all) or one record (one).
type recordCmd struct {
	id  string
	all *redis.MapStringStringCmd
	one *redis.StringCmd
}

// Snapshot reads what r names in one pipelined round trip. Expired levers
// not yet journaled are reaped first, when the user may, which costs more
// round trips only then. Nothing is written otherwise.
func (s *Store) Snapshot(ctx context.Context, r SnapshotRequest) (*Snapshot, error) {
	if r.Rate != nil {
		if err := r.Rate.Limit.check(); err != nil {
			return nil, err
		}
	}
	for reaped := false; ; reaped = true {
		c, err := s.querySnapshot(ctx, r)
		if err != nil {
			return nil, err
		}
		if !reaped && len(c.due.Val()) > 0 && s.reapQuietly(ctx) {
			continue
		}
		return s.decodeSnapshot(r, c)
	}
}

func (s *Store) querySnapshot(ctx context.Context, r SnapshotRequest) (*snapshotCmds, error) {
	k := s.keys
	pipe := s.client.Pipeline()
	c := &snapshotCmds{due: s.dueCheck(ctx, pipe), head: pipe.Get(ctx, k.JournalHead()), replays: map[string]*redis.StringCmd{}}
	if len(r.Targets) > 0 {
		members := make([]string, len(r.Targets))
		for i, t := range r.Targets {
			members[i] = lever.Member(r.Kind, t)
			c.levers = append(c.levers, pipe.Get(ctx, k.Lever(r.Kind, t)))
		}
		c.versions = pipe.HMGet(ctx, k.Versions(), members...)
	}
	if r.Rate != nil {
		for _, key := range r.Rate.keys(k) {
			c.counts = append(c.counts, pipe.Get(ctx, key))
			c.ttls = append(c.ttls, pipe.PTTL(ctx, key))
		}
	}
	for _, key := range r.IdempotencyKeys {
		if key != "" {
			c.replays[key] = pipe.Get(ctx, k.Idempotency(key))
		}
	}
	for _, ref := range r.Records {
		rc := recordCmd{id: ref.ID}
		if ref.ID == "" {
			rc.all = pipe.HGetAll(ctx, k.Records(ref.Collection))
		} else {
			rc.one = pipe.HGet(ctx, k.Records(ref.Collection), ref.ID)
		}
		c.records = append(c.records, rc)
	}
	if err := execReads(ctx, pipe); err != nil {
		op := "read the control plane"
		if len(r.Targets) > 0 {
			op = "read " + lever.Member(r.Kind, strings.Join(r.Targets, ","))
		}
		return nil, s.classify(op, err, false)
	}
	return c, nil
}

// execReads runs a read pipeline; an absent key (redis.Nil) is no error.
func execReads(ctx context.Context, pipe redis.Pipeliner) error {
	cmds, err := pipe.Exec(ctx)
	if err == nil {
		return nil
	}
	for _, cmd := range cmds {
		if e := cmd.Err(); e != nil && !errors.Is(e, redis.Nil) {
			return e
		}
	}
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

func (s *Store) decodeSnapshot(r SnapshotRequest, c *snapshotCmds) (*Snapshot, error) {
	snap := &Snapshot{Levers: map[string]LeverRead{}, Head: c.head.Val(), Replays: map[string]*Result{}}
	s.setHead(snap.Head)
	for i, t := range r.Targets {
		var lr LeverRead
		if v, ok := c.versions.Val()[i].(string); ok {
			lr.Version, _ = strconv.ParseInt(v, 10, 64)
		}
		if raw := c.levers[i].Val(); raw != "" {
			lr.Lever = &lever.Lever{}
			if err := json.Unmarshal([]byte(raw), lr.Lever); err != nil {
				return nil, fmt.Errorf("lever %s: %w", lever.Member(r.Kind, t), err)
			}
			// Redis still returns a key in the millisecond of its expiry;
			// every reader treats the lever as absent from expires_at on.
			if !lr.Lever.Live(time.Now()) {
				lr.Lever = nil
			}
		}
		snap.Levers[t] = lr
	}
	if r.Rate != nil {
		n := func(cmd *redis.StringCmd) int64 { v, _ := strconv.ParseInt(cmd.Val(), 10, 64); return v }
		snap.Rate = r.Rate.status(n(c.counts[0]), n(c.counts[1]), c.ttls[0].Val(), c.ttls[1].Val())
	}
	for key, cmd := range c.replays {
		if cmd.Val() == "" {
			continue
		}
		res, err := decodeReplay(key, cmd.Val())
		if err != nil {
			return nil, err
		}
		snap.Replays[key] = res
	}
	for _, rc := range c.records {
		m := map[string]string{}
		switch {
		case rc.all != nil:
			m = rc.all.Val()
		case rc.one.Val() != "":
			m[rc.id] = rc.one.Val()
		}
		snap.Records = append(snap.Records, m)
	}
	return snap, nil
}
