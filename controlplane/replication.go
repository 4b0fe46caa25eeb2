package controlplane

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/internal/exit"
)

// Write confirmation defaults: one replica, and a wait short enough that a
// responder is told in about a second when replication is behind.
const (
	DefaultWaitReplicas = 1
	DefaultWaitTimeout  = time.Second
	// maxWaitTimeout stays under the client's read timeout, so a WAIT
	// that runs out is an answer, not a broken connection.
	maxWaitTimeout = ioTimeout - 500*time.Millisecond
	// probeEvery is how often a long-running store asks again how many
	// replicas the primary has.
	probeEvery = 30 * time.Second
)

// Replication is what confirmed a write beyond the primary's memory.
type Replication struct {
	// Replicated is true when Wanted replicas acknowledged the write
	// before the timeout (and, with AOF, the primary fsynced it).
	Replicated bool `json:"replicated"`
	// Acked is how many replicas acknowledged it.
	Acked  int `json:"acked"`
	Wanted int `json:"wanted"`
	// Replicas is how many replicas the primary had when last asked; 0 on
	// a standalone server, where there is nothing to wait for.
	Replicas int `json:"replicas"`
	// AOF: the primary has appendonly on and the wait was WAITAOF.
	AOF bool `json:"aof,omitempty"`
	// Waited is false when no wait ran (standalone, or waiting disabled).
	Waited bool `json:"waited"`
}

// Unconfirmed reports whether a wait ran and did not get its replicas.
func (r *Replication) Unconfirmed() bool { return r != nil && r.Waited && !r.Replicated }

// String says it in words, for stderr and the dashboard.
func (r *Replication) String() string {
	switch {
	case r == nil:
		return "replication unknown"
	case !r.Waited && r.Replicas == 0:
		return "replicas: 0 (standalone server: nothing to confirm; a lost server loses the write)"
	case !r.Waited:
		return fmt.Sprintf("replicas: %d, not waited for (wait-replicas 0)", r.Replicas)
	case r.Replicated:
		return fmt.Sprintf("replicated to %d of %d replicas", r.Acked, r.Replicas)
	}
	return fmt.Sprintf("NOT replicated: %d of %d wanted replicas confirmed in time; a failover now could lose it", r.Acked, r.Wanted)
}

// UnreplicatedError says that writes were made but not confirmed by the
// replicas in time: they are in force, and a failover before the replicas
// catch up would lose them. It exits 7. A retry with the same idempotency
// key replays the first result and writes nothing twice.
type UnreplicatedError struct {
	Op          string
	Replication Replication
}

func (e *UnreplicatedError) Error() string {
	return fmt.Sprintf("%s: applied, but %s (retry with the same --idempotency-key to check again; nothing is applied twice)", e.Op, e.Replication.String())
}

// ExitCode implements exit.Coder.
func (e *UnreplicatedError) ExitCode() int { return exit.Unreplicated }

// durability is how a store confirms its writes.
type durability struct {
	wanted  int
	timeout time.Duration
	// expect: the deployment has replicas (Sentinel), so a primary without
	// any is waited on, and fails to confirm, rather than called standalone.
	expect bool

	mu       sync.Mutex
	probed   time.Time
	replicas int
	aof      bool // appendonly on and WAITAOF available (Redis 7.2+)
}

// SetWait sets how many replicas must confirm each write and for how long
// to wait; replicas 0 disables the wait. Call it before the first write.
func (s *Store) SetWait(replicas int, timeout time.Duration) {
	if timeout <= 0 {
		timeout = DefaultWaitTimeout
	}
	s.dur.wanted, s.dur.timeout = max(replicas, 0), min(timeout, maxWaitTimeout)
}

// ReplicationInfo is the primary's replication state, for status.
type ReplicationInfo struct {
	Role               string `json:"role"`
	Replicas           int    `json:"replicas"`
	LagSeconds         []int  `json:"lag_seconds"` // per connected replica, from INFO replication
	MinReplicasToWrite int    `json:"min_replicas_to_write"`
	MinReplicasMaxLag  int    `json:"min_replicas_max_lag"`
	AOF                bool   `json:"aof"`
	WaitReplicas       int    `json:"wait_replicas"`
	WaitTimeout        string `json:"wait_timeout"`
}

// String is the status line: replicas, lag, and whether the settings that
// bound loss are on.
func (r ReplicationInfo) String() string {
	s := fmt.Sprintf("replication: %s, replicas: %d", r.Role, r.Replicas)
	if len(r.LagSeconds) > 0 {
		s += fmt.Sprintf(" (lag %v s)", r.LagSeconds)
	}
	s += fmt.Sprintf(", min-replicas-to-write %d", r.MinReplicasToWrite)
	if r.MinReplicasToWrite > 0 {
		s += fmt.Sprintf(" (max lag %ds)", r.MinReplicasMaxLag)
	}
	if r.AOF {
		s += ", aof on"
	}
	if r.WaitReplicas > 0 {
		s += fmt.Sprintf("; each write waits for %d replica(s), up to %s", r.WaitReplicas, r.WaitTimeout)
	} else {
		s += "; writes do not wait for replicas (wait-replicas 0)"
	}
	if r.Replicas > 0 && r.MinReplicasToWrite == 0 {
		s += "; a failover can lose acknowledged writes (see docs/replication.md)"
	}
	return s
}

// Replication reads the primary's replication state: role, replicas and
// their lag, and the settings that bound loss on failover.
func (s *Store) Replication(ctx context.Context) (ReplicationInfo, error) {
	info := ReplicationInfo{WaitReplicas: s.dur.wanted, WaitTimeout: s.dur.timeout.String()}
	c, err := s.primaryFor(ctx)
	if err != nil {
		return info, err
	}
	text, err := c.Info(ctx, "replication", "persistence").Result()
	if err != nil {
		return info, fmt.Errorf("INFO replication: %w", err)
	}
	f := infoFields(text)
	info.Role = f["role"]
	info.Replicas, _ = strconv.Atoi(f["connected_slaves"])
	info.AOF = f["aof_enabled"] == "1"
	for i := 0; i < info.Replicas && i < 64; i++ {
		for _, kv := range strings.Split(f["slave"+strconv.Itoa(i)], ",") {
			if v, ok := strings.CutPrefix(kv, "lag="); ok {
				lag, _ := strconv.Atoi(v)
				info.LagSeconds = append(info.LagSeconds, lag)
			}
		}
	}
	for name, dst := range map[string]*int{"min-replicas-to-write": &info.MinReplicasToWrite, "min-replicas-max-lag": &info.MinReplicasMaxLag} {
		if kv, err := c.ConfigGet(ctx, name).Result(); err == nil {
			*dst, _ = strconv.Atoi(kv[name])
		}
	}
	return info, nil
}

// infoFields parses INFO's "key:value" lines; unknown lines are skipped.
func infoFields(text string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && !strings.HasPrefix(k, "#") {
			out[k] = v
		}
	}
	return out
}

// primaryFor is a client on the node that holds the namespace's keys:
// WAIT counts the writes of the connection it runs on, so the script and
// its WAIT must go to the same node, in one pipeline.
func (s *Store) primaryFor(ctx context.Context) (*redis.Client, error) {
	switch c := s.client.(type) {
	case *redis.Client:
		return c, nil
	case *redis.ClusterClient:
		return c.MasterForKey(ctx, s.keys.Journal())
	}
	return nil, fmt.Errorf("replication: unsupported client %T", s.client)
}

// probe refreshes what the store knows of the primary's replicas.
func (s *Store) probe(ctx context.Context, c *redis.Client) {
	d := &s.dur
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.probed.IsZero() && time.Since(d.probed) < probeEvery {
		return
	}
	text, err := c.Info(ctx, "replication", "persistence", "server").Result()
	if err != nil {
		return // asked again at the next write; the wait decides meanwhile
	}
	f := infoFields(text)
	d.probed = time.Now()
	d.replicas, _ = strconv.Atoi(f["connected_slaves"])
	d.aof = f["aof_enabled"] == "1" && versionAtLeast(f["redis_version"], 7, 2)
}

func versionAtLeast(v string, major, minor int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, _ := strconv.Atoi(parts[0])
	mi, _ := strconv.Atoi(parts[1])
	return ma > major || (ma == major && mi >= minor)
}

// runConfirmed runs a write script and, when the primary has replicas (or
// the deployment should), WAIT (WAITAOF with AOF on) in the same pipeline,
// so the wait covers this connection's write.
func (s *Store) runConfirmed(ctx context.Context, script *redis.Script, keys []string, args []any) ([]string, *Replication, error) {
	d := &s.dur
	if d.wanted == 0 {
		reply, err := script.Run(ctx, s.client, keys, args...).StringSlice()
		return reply, &Replication{Replicas: d.replicas}, err
	}
	c, err := s.primaryFor(ctx)
	if err != nil {
		return nil, nil, err
	}
	s.probe(ctx, c)
	d.mu.Lock()
	replicas, aof := d.replicas, d.aof
	d.mu.Unlock()
	rep := &Replication{Wanted: d.wanted, Replicas: replicas, AOF: aof}
	if replicas == 0 && !d.expect {
		reply, err := script.Run(ctx, c, keys, args...).StringSlice()
		return reply, rep, err
	}
	var eval, wait *redis.Cmd
	run := func() error {
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			eval = script.EvalSha(ctx, p, keys, args...)
			ms := d.timeout.Milliseconds()
			if aof {
				wait = p.Do(ctx, "WAITAOF", 1, d.wanted, ms)
			} else {
				wait = p.Do(ctx, "WAIT", d.wanted, ms)
			}
			return nil
		})
		return err
	}
	err = run()
	if eval != nil && redis.HasErrorPrefix(eval.Err(), "NOSCRIPT") {
		if err = script.Load(ctx, c).Err(); err == nil {
			err = run()
		}
	}
	if eval == nil || eval.Err() != nil {
		if eval != nil {
			err = eval.Err()
		}
		return nil, nil, err
	}
	reply, err := eval.StringSlice()
	if err != nil {
		return nil, nil, err
	}
	rep.Waited = true
	rep.Acked, rep.Replicated = waitAcked(wait, aof)
	rep.Replicated = rep.Replicated && rep.Acked >= d.wanted
	if rep.Acked > rep.Replicas {
		rep.Replicas = rep.Acked
	}
	return reply, rep, nil
}

// waitAcked reads WAIT's count, or WAITAOF's [local, replicas] pair (the
// primary's own fsync must have happened too). An error is no confirmation.
func waitAcked(cmd *redis.Cmd, aof bool) (int, bool) {
	if cmd == nil || cmd.Err() != nil {
		return 0, false
	}
	if !aof {
		n, err := cmd.Int()
		return n, err == nil
	}
	pair, err := cmd.Int64Slice()
	if err != nil || len(pair) != 2 {
		return 0, false
	}
	return int(pair[1]), pair[0] >= 1
}
