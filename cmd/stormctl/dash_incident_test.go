package main

import (
	"context"
	"os"
	"testing"

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
