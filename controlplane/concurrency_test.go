package controlplane

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

func verifyJournal(t *testing.T, s *Store) int {
	t.Helper()
	n, err := s.VerifyJournal(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Fifty responders race for one lever, each retrying on conflict until its
// own apply lands: every version has exactly one winner, no update is
// lost, and every attempt, won or refused, is in a valid journal.
func TestFiftyConcurrentAppliesOneWinnerPerVersion(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, testenv.StartRedis(t, testenv.RedisOptions{}), "", "")
	const n = 50
	var conflicts atomic.Int64
	wins := make(chan Result, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			l := retriesLever("checkout->payments", fmt.Sprintf("cap:%d", i+1), time.Hour)
			l.Actor = fmt.Sprintf("responder-%02d", i)
			for attempt := 0; attempt < 10*n; attempt++ {
				cur, ver, head, err := s.Get(ctx, lever.Retries, l.Target)
				if err != nil {
					t.Error(err)
					return
				}
				res, err := s.Apply(ctx, ApplyRequest{Lever: l, Expected: ver, Current: cur, Head: head})
				var ce *ConflictError
				switch {
				case errors.As(err, &ce):
					conflicts.Add(1)
				case err != nil:
					t.Error(err)
					return
				default:
					wins <- res
					return
				}
			}
			t.Errorf("%s never won", l.Actor)
		})
	}
	close(start)
	wg.Wait()
	close(wins)

	byVersion := map[int64]string{}
	for r := range wins {
		if prev, dup := byVersion[r.Version]; dup {
			t.Fatalf("version %d won by %s and %s", r.Version, prev, r.Lever.Actor)
		}
		byVersion[r.Version] = r.Lever.Actor
	}
	if len(byVersion) != n {
		t.Fatalf("%d winners, want %d", len(byVersion), n)
	}
	final, ver, _, _ := s.Get(ctx, lever.Retries, "checkout->payments")
	if ver != n || final.Version != n || final.Actor != byVersion[n] {
		t.Fatalf("final lever %+v at version %d, want the winner of version %d", final, ver, n)
	}
	applied, refused := 0, 0
	for _, e := range journalEntries(t, s) {
		switch e.Event {
		case journal.ActionApplied:
			applied++
			if byVersion[e.New.Version] != e.Actor {
				t.Fatalf("journal says %s won version %d", e.Actor, e.New.Version)
			}
		case journal.ActionRefused:
			refused++
		}
	}
	if applied != n || int64(refused) != conflicts.Load() {
		t.Fatalf("journal: %d applied, %d refused; want %d and %d", applied, refused, n, conflicts.Load())
	}
	t.Logf("%d applies, %d refused on conflict", applied, refused)
	verifyJournal(t, s)
}
