package actions

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/journal"
)

// TestUnreachableJournalsEachAttempt: over an unreachable control plane
// the normal path fails each attempt with the reason and journals it,
// into the local pending file: a plan as planned, an apply and a request
// as refused with the error.
func TestUnreachableJournalsEachAttempt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal-pending.jsonl")
	cause := &controlplane.UnavailableError{Err: errors.New("dial tcp 127.0.0.1:1: connection refused")}
	s := world(newFakeCP(), config.Policy{})
	s.Store, s.Journal = Unreachable(cause), journal.NewWriter(nil, path)
	spec := okSpec()
	spec.Actor = "alice"
	ctx := context.Background()
	if _, err := s.Plan(ctx, spec); !errors.Is(err, controlplane.ErrUnavailable) {
		t.Fatalf("plan: %v", err)
	}
	if _, err := s.Apply(ctx, spec); !errors.Is(err, controlplane.ErrUnavailable) {
		t.Fatalf("apply: %v", err)
	}
	if _, _, err := s.Request(ctx, spec); !errors.Is(err, controlplane.ErrUnavailable) {
		t.Fatalf("request: %v", err)
	}
	es, err := journal.Pending(path)
	if err != nil || len(es) != 3 {
		t.Fatalf("pending: %d entries %v, want 3", len(es), err)
	}
	for i, want := range []journal.Event{journal.ActionPlanned, journal.ActionRefused, journal.ActionRefused} {
		e := es[i]
		if e.Event != want || e.Actor != "alice" || e.Outcome != "error" || !e.Offline || !strings.Contains(e.Error, "127.0.0.1:1") ||
			e.Kind != "retries" || e.Target != "checkout->payments" {
			t.Errorf("entry %d: %+v, want %s with the error", i, e, want)
		}
	}
}
