package controlplane

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

func openAt(t testing.TB, addr string, wait *int) *Store {
	t.Helper()
	s, err := Open(context.Background(), config.Redis{URL: "redis://" + addr, Namespace: "r", WaitReplicas: wait, WaitTimeout: config.Duration(300 * time.Millisecond)},
		func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestWriteWaitsForReplica(t *testing.T) {
	ctx := context.Background()
	primary, replica := testenv.StartReplicated(t)
	// A healthy replica acknowledges within the wait even on a loaded
	// machine under -race; the hung replica below meets the short one.
	healthy, err := Open(ctx, config.Redis{URL: "redis://" + primary.Addr, Namespace: "r", WaitTimeout: config.Duration(2 * time.Second)},
		func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer healthy.Close()
	s := openAt(t, primary.Addr, nil)

	res := apply(t, healthy, retriesLever("checkout", "off", time.Minute))
	if rep := res.Replication; rep == nil || !rep.Waited || !rep.Replicated || rep.Acked != 1 || rep.Replicas != 1 {
		t.Fatalf("healthy replica: %+v", res.Replication)
	}
	info, err := s.Replication(ctx)
	if err != nil || info.Role != "master" || info.Replicas != 1 || len(info.LagSeconds) != 1 || info.WaitReplicas != 1 {
		t.Fatalf("%v %+v", err, info)
	}

	// The replica hangs: the write is made, and says it is not replicated,
	// within the bounded wait.
	replica.Pause()
	defer replica.Resume()
	l := retriesLever("cart", "off", time.Minute)
	req := ApplyRequest{Lever: l, Entry: journal.Entry{Actor: l.Actor}, IdempotencyKey: "storm-1", RequestHash: "h1"}
	start := time.Now()
	res, err = s.Apply(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the wait was not bounded: %v", took)
	}
	if rep := res.Replication; !rep.Unconfirmed() || rep.Acked != 0 || !strings.Contains(rep.String(), "NOT replicated") {
		t.Fatalf("paused replica: %+v", rep)
	}
	ue := &UnreplicatedError{Op: "apply", Replication: *res.Replication}
	if exit.Code(ue) != exit.Unreplicated || exit.Unreplicated != 7 {
		t.Fatal(exit.Code(ue))
	}
	// A retry with the same key replays: nothing is written twice.
	again, err := s.Apply(ctx, req)
	if err != nil || !again.Replayed || again.Version != res.Version || again.Entry.ID != res.Entry.ID {
		t.Fatalf("retry: %v %+v", err, again)
	}
	if n := s.Client().XLen(ctx, s.Keys().Journal()).Val(); n != 2 {
		t.Fatalf("journal has %d entries, want 2", n)
	}
	if got, v, _, _ := s.Get(ctx, lever.Retries, "cart"); got == nil || v != 1 {
		t.Fatalf("%+v %d", got, v)
	}
}

func TestStandaloneReportsNoReplicas(t *testing.T) {
	r := testenv.StartRedis(t, testenv.RedisOptions{})
	s := openAt(t, r.Addr, nil)
	res := apply(t, s, retriesLever("checkout", "off", time.Minute))
	if rep := res.Replication; rep == nil || rep.Waited || rep.Replicas != 0 || rep.Unconfirmed() || !strings.Contains(rep.String(), "replicas: 0") {
		t.Fatalf("%+v", res.Replication)
	}
	// wait-replicas 0 turns the wait off, even with a replica.
	primary, _ := testenv.StartReplicated(t)
	zero := 0
	res = apply(t, openAt(t, primary.Addr, &zero), retriesLever("checkout", "off", time.Minute))
	if res.Replication.Waited {
		t.Fatalf("%+v", res.Replication)
	}
}
