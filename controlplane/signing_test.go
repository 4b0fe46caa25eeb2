package controlplane

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
)

// testSigner is a fresh ed25519 key and its allowed_signers line for name.
func testSigner(t *testing.T, name string) (journal.Signer, string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return journal.NewSigner(key, name), name + " " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key.PublicKey())))
}

// TestEveryWriteIsSigned writes through every path that appends to the
// journal — apply, a refused conflict, release, a note, a record swap,
// an expiry and a sync of the pending file — and checks that each entry
// is signed by its writer's key.
func TestEveryWriteIsSigned(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t, testenv.RedisOptions{})
	alice, bob := openStore(t, r, "", ""), openStore(t, r, "", "")
	aliceKey, aliceLine := testSigner(t, "alice")
	bobKey, bobLine := testSigner(t, "bob")
	alice.SetSigner(aliceKey)
	bob.SetSigner(bobKey)
	allowed, err := journal.ParseAllowedSigners(strings.NewReader(aliceLine+"\n"+bobLine+"\n"), "allowed_signers")
	if err != nil {
		t.Fatal(err)
	}

	held := apply(t, alice, retriesLever("checkout->payments", "off", 10*time.Minute))
	// bob, on the same lever at the version alice read: refused, journaled.
	l := retriesLever("checkout->payments", "cap:2", 10*time.Minute)
	l.Actor = "bob"
	if _, err := bob.Apply(ctx, ApplyRequest{Lever: l, Expected: 0, Entry: journal.Entry{Actor: "bob"}}); err == nil {
		t.Fatal("bob's stale apply succeeded")
	}
	if _, err := alice.Release(ctx, ReleaseRequest{Current: held.Lever, Entry: journal.Entry{Actor: "alice", Reason: "recovered"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.Append(ctx, journal.Entry{Event: journal.Note, Actor: "bob", Reason: "watching"}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.SwapRecord(ctx, "incidents", "INC-1", "", `{"title":"storm"}`, journal.Entry{Event: journal.IncidentOpened, Actor: "alice"}); err != nil {
		t.Fatal(err)
	}
	short := retriesLever("ledger", "off", 1500*time.Millisecond)
	short.Actor = "bob"
	apply(t, bob, short)
	pending := filepath.Join(t.TempDir(), "pending.jsonl")
	if _, err := journal.AppendPending(pending, journal.Entry{Event: journal.Note, Actor: "alice", Reason: "written offline"}); err != nil {
		t.Fatal(err)
	}
	if res, err := journal.Sync(ctx, alice, pending); err != nil || res.Appended != 1 {
		t.Fatalf("sync: %+v %v", res, err)
	}
	// The expiry is journaled by whoever reaps it first: alice here.
	deadline := time.Now().Add(15 * time.Second)
	for {
		es, err := alice.Reap(ctx, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if len(es) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the short lever was never reaped")
		}
		time.Sleep(100 * time.Millisecond)
	}

	head, _ := alice.JournalHead(ctx)
	rep, err := journal.Check(alice.Journal().Range(ctx, "-", "+"), journal.VerifyOptions{Head: head, AllowedSigners: allowed, RequireSignatures: true})
	if err != nil || !rep.OK() || rep.Entries != 8 || rep.Verified != 8 {
		t.Fatalf("%v\n%+v", err, rep)
	}
	if rep.BySigner["alice"] != 4 || rep.BySigner["bob"] != 3 || rep.BySigner[journal.ExpiryActor+" signed by alice"] != 1 {
		t.Fatalf("signers: %v", rep.BySigner)
	}
}
