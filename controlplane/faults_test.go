package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// SIGKILL the server in the middle of a burst of applies, restart it from
// its append-only file: every lever write has its journal entry and every
// journaled write its lever state, and every apply that reported success
// survived. While the server is down commands fail cleanly.
func TestKillDuringBurstLeavesNoPartialAction(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t, testenv.RedisOptions{Persist: true})
	s := openStore(t, r, "", "")
	targets := []string{"a", "b", "c", "d"}

	var mu sync.Mutex
	acked := map[string]bool{} // entry ids of applies that reported success
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				target := targets[(w+i)%len(targets)]
				cur, ver, head, err := s.Get(ctx, lever.Shed, target)
				if err != nil {
					continue
				}
				l := lever.Lever{Kind: lever.Shed, Target: target, Value: strconv.Itoa(i%100 + 1), Actor: fmt.Sprint("w", w), Reason: "burst", ExpiresAt: time.Now().Add(time.Hour)}
				res, err := s.Apply(ctx, ApplyRequest{Lever: l, Expected: ver, Current: cur, Head: head})
				if err == nil {
					mu.Lock()
					acked[res.Entry.ID] = true
					mu.Unlock()
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	r.Kill()
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wg.Wait()

	_, _, _, err := s.Get(ctx, lever.Shed, "a")
	var ue *UnavailableError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("read while down: want *UnavailableError, got %v", err)
	}
	t.Logf("while down: %v", err)

	r.Restart()
	entries := journalEntries(t, s) // also verifies the chain and head
	writes := map[string][]journal.Entry{}
	for _, e := range entries {
		if e.Event == journal.ActionApplied {
			writes[e.Target] = append(writes[e.Target], e)
			delete(acked, e.ID)
		}
	}
	if len(acked) != 0 {
		t.Fatalf("%d applies reported success but are not in the journal", len(acked))
	}
	if len(entries) < 10 {
		t.Fatalf("only %d journal entries: the burst did not run", len(entries))
	}
	for _, target := range targets {
		l, ver, _, err := s.Get(ctx, lever.Shed, target)
		if err != nil {
			t.Fatal(err)
		}
		ws := writes[target]
		if int64(len(ws)) != ver {
			t.Fatalf("%s: version %d but %d journaled writes", target, ver, len(ws))
		}
		if len(ws) == 0 {
			continue
		}
		last := ws[len(ws)-1]
		if l == nil || l.Version != ver || l.ActionID != last.ActionID || l.Value != last.Value {
			t.Fatalf("%s: lever %+v does not match its last journal entry %+v", target, l, last)
		}
	}
	t.Logf("%d entries survived the crash, all consistent", len(entries))
	// And it works again.
	apply(t, s, retriesLever("after-restart", "off", time.Minute))
}

// flaky is a journal.Remote that loses the reply of its nth AppendOnce:
// the entry was appended but the caller sees an error, as in a sync cut
// short by a network failure.
type flaky struct {
	*Store
	n, calls int
}

func (f *flaky) AppendOnce(ctx context.Context, e journal.Entry) (journal.Entry, bool, error) {
	f.calls++
	sealed, ok, err := f.Store.AppendOnce(ctx, e)
	if f.calls == f.n {
		return sealed, ok, &UncertainError{Op: "append", Err: errors.New("connection reset")}
	}
	return sealed, ok, err
}

func TestWriterFallsBackLocallyAndSyncAppendsOnce(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t, testenv.RedisOptions{Persist: true})
	s := openStore(t, r, "", "")
	pending := filepath.Join(t.TempDir(), "state", "journal-pending.jsonl")
	w := journal.NewWriter(s, pending)
	if _, local, err := w.Append(ctx, journal.Entry{Event: journal.IncidentOpened, Actor: "alice", Incident: "INC-9"}); err != nil || local {
		t.Fatalf("append while up: local=%v %v", local, err)
	}

	r.Kill()
	var ids []string
	for i := range 5 {
		e := journal.Entry{Event: journal.ActionRefused, Actor: "alice", Incident: "INC-9", Reason: fmt.Sprint("attempt ", i),
			Time: time.Date(2024, 5, 1, 12, i, 0, 0, time.UTC), Error: "control plane unreachable"}
		got, local, err := w.Append(ctx, e)
		if err != nil || !local {
			t.Fatalf("append while down: local=%v %v", local, err)
		}
		ids = append(ids, got.ID)
	}
	if _, err := journal.Sync(ctx, s, pending); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("sync while down: %v", err)
	}

	r.Restart()
	res, err := journal.Sync(ctx, &flaky{Store: s, n: 3}, pending)
	if err == nil || res.Appended != 2 {
		t.Fatalf("interrupted sync: %+v %v", res, err)
	}
	res, err = journal.Sync(ctx, s, pending)
	if err != nil || res.Appended != 2 || res.Skipped != 3 {
		t.Fatalf("second sync: %+v %v", res, err)
	}
	if res, err = journal.Sync(ctx, s, pending); err != nil || res != (journal.SyncResult{}) {
		t.Fatalf("third sync: %+v %v", res, err)
	}

	entries := journalEntries(t, s)
	if len(entries) != 6 {
		t.Fatalf("journal has %d entries, want 6", len(entries))
	}
	for i, e := range entries[1:] {
		if e.ID != ids[i] || !e.Offline || e.Time.Minute() != i || e.RedisUserNote != journal.OfflineNote {
			b, _ := json.Marshal(e)
			t.Fatalf("synced entry %d: %s", i, b)
		}
	}
}
