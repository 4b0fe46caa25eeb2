package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/journal"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/iostreams"
)

// `dash --read-only` has no action service, yet shows the open incident:
// finding it reads Redis only.
func TestReadOnlyDashFindsCurrentIncident(t *testing.T) {
	e := newActionEnv(t)
	inc, _ := e.expect(exit.OK, "alice", "incident", "open", "payments storm", "-o", "json")
	for k, v := range e.env {
		t.Setenv(k, v)
	}
	t.Setenv("STORMCTL_ACTOR", "") // a viewer need not say who they are
	io, _, _, _ := iostreams.Test()
	f := newFactory(io, os.Getenv)
	store, err := f.Store(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := currentIncidentID(context.Background(), store); got == "" || got != inc["id"] {
		t.Fatalf("current incident %q, want %v", got, inc["id"])
	}
}

// A dashboard started while Redis is down still records each plan and
// apply in the local pending file, as the CLI does.
func TestOfflineDashboardActionsRecordAttempts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal-pending.jsonl")
	cause := errors.New("control plane redis://127.0.0.1:1 unreachable")
	o := offlineActions{journal: journal.NewWriter(nil, path), actor: "alice", cause: cause}
	spec := actions.Spec{Kind: "retries", Target: "checkout->payments", Value: "off", TTL: 10 * time.Minute, Reason: "amplification 4x"}
	if _, err := o.Plan(context.Background(), spec); !errors.Is(err, cause) {
		t.Fatalf("plan: %v", err)
	}
	if _, err := o.Apply(context.Background(), spec); !errors.Is(err, cause) {
		t.Fatalf("apply: %v", err)
	}
	es, err := journal.Pending(path)
	if err != nil || len(es) != 2 || es[0].Event != journal.ActionPlanned || es[1].Event != journal.ActionRefused ||
		es[0].Actor != "alice" || es[0].Outcome != "error" || !strings.Contains(es[1].Error, "127.0.0.1:1") || !es[0].Offline {
		t.Fatalf("pending: %+v %v", es, err)
	}
}
