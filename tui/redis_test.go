package tui

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// realStore is the control plane on a real redis-server of the test's own.
func realStore(t *testing.T) (*testenv.Redis, *controlplane.Store) {
	t.Helper()
	r := testenv.StartRedis(t, testenv.RedisOptions{})
	store, err := controlplane.Open(context.Background(), config.Redis{URL: r.URL("", ""), Namespace: "tui"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return r, store
}

// Against a real redis-server that dies and comes back: the levers are
// marked stale while it is down (and stay listed), the error is shown,
// and once it answers again the levers are read afresh and the error is
// cleared.
func TestLeversStaleWhileRedisDown(t *testing.T) {
	ctx := context.Background()
	r, store := realStore(t)
	now := time.Now()
	l := lever.Lever{Kind: lever.Retries, Target: "checkout->payments", Value: "off", Actor: "alice", Reason: "amplification 4x",
		CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if _, err := store.Apply(ctx, controlplane.ApplyRequest{Lever: l}); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, newClock(), Deps{Store: store}, Options{Context: "lab", Actor: "alice"}, 80, 24)
	h.contains("retries checkout->payments=off")
	h.lacks("STALE")

	r.Kill()
	h.fire(acksTickMsg{}, 5*time.Second)
	h.send(h.m.readLevers()()) // the read a lost change feed makes
	h.contains("Levers (1) STALE", "STALE since", "retries checkout->payments=off", "✗ levers:")

	r.Restart()
	deadline := time.Now().Add(20 * time.Second)
	for h.m.levers.Stale() && time.Now().Before(deadline) {
		h.fire(acksTickMsg{}, 5*time.Second) // the client reconnects on its own
		time.Sleep(100 * time.Millisecond)
	}
	// The server restarted empty (SIGKILL, no persistence): the fresh read
	// replaces the stale list.
	h.lacks("STALE", "✗ levers:", "retries checkout->payments=off")
	h.contains("levers: reconnected", "Levers (0)")
	checkSize(t, h.view(), 80, 24)
}

// A plan made in the dialog while Redis is down is on the record like the
// CLI's attempts: in the local pending file, for `journal sync`; and the
// pending approvals read before stay listed.
func TestPlanWhileRedisDownGoesToPendingFile(t *testing.T) {
	ctx := context.Background()
	r, store := realStore(t)
	pol, err := actions.NewPolicy(config.Policy{Approval: []string{"autoscaling"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pending := filepath.Join(t.TempDir(), "journal-pending.jsonl")
	svc := &actions.Service{Store: actions.FromStore(store), Journal: journal.NewWriter(store, pending), Policy: pol,
		Inventory: actions.NewNames(config.Inventory{Services: []string{"checkout"}, Dependencies: []string{"payment-gateway"}}, nil, nil),
		Evidence:  actions.Unavailable{Err: errors.New("no prometheus in this test")}, Clock: actions.SystemClock{}, Confirm: TypedConfirmer{}}
	if _, err := svc.Apply(ctx, actions.Spec{Kind: "autoscaling", Target: "checkout", Value: "frozen", TTL: 10 * time.Minute,
		Reason: "hold replicas", Actor: "bob", Force: true, Yes: true}); exit.Code(err) != exit.Pending {
		t.Fatalf("request: %v", err)
	}
	w := newWorld()
	h := newHarness(t, w.c, Deps{Querier: w.q, Store: store, Journal: store.Journal(), Actions: svc}, Options{Actor: "alice"}, 80, 24)
	h.key("tab")
	h.contains("pending approval:", "autoscaling checkout=frozen by bob")

	r.Kill()
	h.send(h.m.readApprovals()())
	h.contains("pending approval:", "autoscaling checkout=frozen by bob", "✗ approvals:")
	h.key("shift+tab", "a")
	h.typeText("amplification 4x")
	h.key("enter")
	// The client retries its dials before it gives up: poll, generously.
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(h.view(), "unreachable") && time.Now().Before(deadline); {
		h.settle()
	}
	h.contains("unreachable")
	es, err := journal.Pending(pending)
	if err != nil || len(es) != 1 || es[0].Event != journal.ActionPlanned || es[0].Outcome != "error" || !es[0].Offline ||
		es[0].Target != "checkout->payment-gateway" || es[0].Actor != "alice" {
		t.Fatalf("the plan must wait in the pending file: %+v %v", es, err)
	}
	checkSize(t, h.view(), 80, 24)
}
