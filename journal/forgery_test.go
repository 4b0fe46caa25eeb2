package journal

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/testenv"
)

// signedWorld is the scripted incident signed by each actor's own key (the
// expiry by bob's, who reaped it), with an allowed_signers file that also
// lists eve, a responder who did none of it.
type signedWorld struct {
	keys    map[string]sshKey
	allowed *AllowedSigners
	lines   [][]byte
	entries []Entry
}

func newSignedWorld(t *testing.T) *signedWorld {
	t.Helper()
	dir := t.TempDir()
	w := &signedWorld{keys: map[string]sshKey{}}
	var allowed []string
	for _, name := range []string{"alice", "bob", "carol", "eve"} {
		k := newKey(t, dir, name, "ed25519")
		w.keys[name] = k
		allowed = append(allowed, name+"@example.com,"+name+" "+k.pub)
	}
	_, w.allowed = allowedFile(t, dir, allowed...)
	prev := ""
	for _, e := range scriptedIncident() {
		signer := w.keys["bob"].signer
		if k, ok := w.keys[e.Actor]; ok {
			signer = k.signer
		}
		sealed, stored, err := e.SealWith(prev, signer)
		if err != nil {
			t.Fatal(err)
		}
		prev = sealed.Hash
		w.lines, w.entries = append(w.lines, stored), append(w.entries, sealed)
	}
	return w
}

// stream writes lines to a fresh stream key on the real server.
func stream(t *testing.T, c *redis.Client, key string, lines [][]byte) *Stream {
	t.Helper()
	for _, l := range lines {
		if err := c.XAdd(context.Background(), &redis.XAddArgs{Stream: key, Values: []string{"entry", string(l)}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return NewStream(c, key)
}

// appendForged is what someone with XADD but no key can do: chain a new
// entry after the head with a correctly recomputed hash, signed by signer
// (nil: unsigned).
func appendForged(t *testing.T, lines [][]byte, e Entry, signer Signer) [][]byte {
	t.Helper()
	_, stored, err := e.SealWith(mustParse(t, lines[len(lines)-1]).Hash, signer)
	if err != nil {
		t.Fatal(err)
	}
	return append(append([][]byte{}, lines...), stored)
}

func wantVerifyError(t *testing.T, err error, index int, contains string) {
	t.Helper()
	var ve *VerifyError
	if !errors.As(err, &ve) || exit.Code(err) != exit.CheckFailed {
		t.Fatalf("want a *VerifyError exiting 4, got %v", err)
	}
	if ve.Index != index || !strings.Contains(err.Error(), contains) {
		t.Fatalf("want entry %d and %q, got %v", index, contains, err)
	}
}

func TestSignedJournalOnRedis(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t, testenv.RedisOptions{})
	c := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer c.Close()
	w := newSignedWorld(t)
	n := len(w.lines)
	head := w.entries[n-1].Hash
	cp, err := NewCheckpoint(head, n, at(20, 0), "alice", w.keys["alice"].signer)
	if err != nil {
		t.Fatal(err)
	}
	checkpoint := []SourcedCheckpoint{{Source: "INC-7.checkpoint", Checkpoint: cp}}
	strict := VerifyOptions{AllowedSigners: w.allowed, RequireSignatures: true, Checkpoints: checkpoint}

	t.Run("intact", func(t *testing.T) {
		rep, err := Check(stream(t, c, "intact", w.lines).Range(ctx, "-", "+"), strict)
		if err != nil || !rep.OK() || rep.Verified != n || rep.BySigner["stormctl (expiry) signed by bob@example.com,bob"] != 1 {
			t.Fatalf("%v %+v", err, rep)
		}
		// Per entry, for renderers: who vouches for each, in order.
		var signers []string
		o := strict
		o.OnEntry = func(r EntryResult) { signers = append(signers, r.Status+":"+r.Signer) }
		if _, err := Check(records(w.lines), o); err != nil || len(signers) != n || signers[0] != "verified:alice" || signers[9] != "verified:stormctl (expiry) signed by bob@example.com,bob" {
			t.Fatalf("%v %q", err, signers)
		}
		got := strings.Join(rep.Proven, "\n")
		for _, want := range []string{"chain intact: 11 entries", "11 of 11 entries signed by allowed signers", "alice 6, bob 3, carol 1, stormctl (expiry) signed by bob@example.com,bob 1",
			"checkpoint of 2024-05-01T12:20:00Z (11 entries", "signed by an allowed signer alice) matched"} {
			if !strings.Contains(got, want) {
				t.Errorf("proven lacks %q:\n%s", want, got)
			}
		}
	})

	t.Run("forged XADD with a recomputed hash", func(t *testing.T) {
		forged := appendForged(t, w.lines, Entry{ID: "F1", Time: at(16, 0), Event: ActionReleased, Actor: "alice", Reason: "all clear"}, nil)
		s := stream(t, c, "forged", forged)
		// The chain alone cannot tell: the hash was recomputed.
		if _, err := Verify(s.Range(ctx, "-", "+"), ""); err != nil {
			t.Fatalf("the chain alone should not catch it: %v", err)
		}
		var last EntryResult
		o := strict
		o.OnEntry = func(r EntryResult) { last = r }
		rep, err := Check(s.Range(ctx, "-", "+"), o)
		wantVerifyError(t, err, n+1, `unsigned entry by "alice"`)
		if last.Index != n+1 || last.Status != ProblemUnsigned || last.Entry.ID != "F1" {
			t.Fatalf("last entry result: %+v", last)
		}
		if rep.Unsigned != 1 || rep.Verified != n {
			t.Fatalf("%+v", rep)
		}
		// alice holds an allowed key, so her unsigned entry fails even
		// without --require-signatures; --allow-unsigned accepts it and says
		// what that means.
		_, err = Check(s.Range(ctx, "-", "+"), VerifyOptions{AllowedSigners: w.allowed})
		wantVerifyError(t, err, n+1, "its actor holds an allowed key")
		rep, err = Check(s.Range(ctx, "-", "+"), VerifyOptions{AllowedSigners: w.allowed, AllowUnsigned: true})
		if err != nil || !strings.Contains(strings.Join(rep.Proven, "\n"), "1 unsigned, which prove nothing") {
			t.Fatalf("%v %q", err, rep.Proven)
		}
		// An actor with no key may write unsigned entries (an automation
		// user, an old journal): they prove nothing, and do not fail.
		plain := appendForged(t, w.lines, Entry{ID: "F4", Time: at(16, 0), Event: Note, Actor: "mallory", Reason: "hi"}, nil)
		if _, err := Check(records(plain), VerifyOptions{AllowedSigners: w.allowed}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("stripped signature", func(t *testing.T) {
		// Someone who can write Redis takes bob's signed entry 4 and
		// alice's 7 out of their signatures and re-chains: hashes and links
		// are right, signatures gone. Both are named.
		prev := w.entries[2].Hash
		lines := append([][]byte{}, w.lines[:3]...)
		for i, x := range w.entries[3:] {
			if i == 0 || i == 3 {
				x.Signature = ""
			}
			sig := x.Signature
			x.Signature = ""
			sealed, _, _ := x.Seal(prev)
			sealed.Signature = sig
			prev, lines = sealed.Hash, append(lines, storedForm(t, sealed))
		}
		rep, err := Check(stream(t, c, "stripped", lines).Range(ctx, "-", "+"), VerifyOptions{AllowedSigners: w.allowed})
		wantVerifyError(t, err, 4, "and 1 more signature problems")
		if rep.ProblemCount != 2 || rep.Problems[0].Index != 4 || rep.Problems[1].Index != 7 || rep.Problems[1].Actor != w.entries[6].Actor {
			t.Fatalf("%+v", rep.Problems)
		}
	})

	t.Run("signed by another actor's key", func(t *testing.T) {
		// eve may sign, but only as eve: her key on an entry of alice's fails
		// even without --require-signatures.
		forged := appendForged(t, w.lines, Entry{ID: "F2", Time: at(16, 0), Event: Note, Actor: "alice", Reason: "I released it"}, w.keys["eve"].signer)
		_, err := Check(stream(t, c, "eve", forged).Range(ctx, "-", "+"), VerifyOptions{AllowedSigners: w.allowed})
		wantVerifyError(t, err, n+1, "signed by the key of eve@example.com,eve, not of alice")
	})

	t.Run("rewritten with the old signatures", func(t *testing.T) {
		// Edit entry 5 and re-chain everything after it: hashes and links are
		// all correct again, but no signature matches its entry any more.
		e := w.entries[4]
		e.Reason = "routine maintenance"
		rewritten := append([][]byte{}, w.lines[:4]...)
		prev := w.entries[3].Hash
		for i, x := range append([]Entry{e}, w.entries[5:]...) {
			sig := w.entries[4+i].Signature
			x.Signature = ""
			sealed, _, _ := x.Seal(prev)
			sealed.Signature = sig
			prev = sealed.Hash
			rewritten = append(rewritten, storedForm(t, sealed))
		}
		rep, err := Check(stream(t, c, "rewritten", rewritten).Range(ctx, "-", "+"), VerifyOptions{AllowedSigners: w.allowed})
		wantVerifyError(t, err, 5, "bad signature")
		if !rep.ChainIntact || rep.ProblemCount != n-4 {
			t.Fatalf("%+v", rep)
		}
	})

	t.Run("cut tail", func(t *testing.T) {
		s := stream(t, c, "cut", w.lines)
		msgs, _ := c.XRange(ctx, "cut", "-", "+").Result()
		c.XDel(ctx, "cut", msgs[n-1].ID, msgs[n-2].ID)
		// Whoever cut the tail also rewrote journal:head, so no head helps;
		// the chain and signatures of what is left are fine.
		if _, err := Check(s.Range(ctx, "-", "+"), VerifyOptions{AllowedSigners: w.allowed, RequireSignatures: true}); err != nil {
			t.Fatalf("without a checkpoint a cut tail is undetectable: %v", err)
		}
		_, err := Check(s.Range(ctx, "-", "+"), strict)
		wantVerifyError(t, err, n, "recorded 11 entries, the journal has 9: entries were cut from its end")
	})

	t.Run("rewritten before the checkpoint", func(t *testing.T) {
		// Drop entry 6 and re-chain the rest, unsigned: the chain is whole
		// again and as long, but the checkpointed head is gone.
		prev := w.entries[4].Hash
		lines := append([][]byte{}, w.lines[:5]...)
		for _, x := range append(w.entries[6:], Entry{ID: "F3", Time: at(15, 30), Event: Note, Actor: "carol"}) {
			sealed, stored, _ := x.Seal(prev)
			prev, lines = sealed.Hash, append(lines, stored)
		}
		_, err := Check(stream(t, c, "dropped", lines).Range(ctx, "-", "+"), VerifyOptions{Checkpoints: checkpoint})
		wantVerifyError(t, err, n, "the journal up to there was rewritten")
	})

	t.Run("unsigned checkpoint", func(t *testing.T) {
		plain, _ := NewCheckpoint(head, n, at(20, 0), "alice", nil)
		cps := []SourcedCheckpoint{{Source: "cp", Checkpoint: plain}}
		rep, err := Check(records(w.lines), VerifyOptions{AllowedSigners: w.allowed, Checkpoints: cps})
		if err != nil || !strings.Contains(rep.Proven[2], "as far as the checkpoint file itself can be trusted") {
			t.Fatalf("%v %q", err, rep.Proven)
		}
		_, err = Check(records(w.lines), VerifyOptions{AllowedSigners: w.allowed, RequireSignatures: true, Checkpoints: cps})
		wantVerifyError(t, err, n, "checkpoint of 2024-05-01T12:20:00Z: unsigned")
	})

	t.Run("re-sealing drops a signature", func(t *testing.T) {
		// A signature of the entry at its old place must not survive a move.
		e := w.entries[3]
		moved, stored, err := e.Seal("0000")
		if err != nil || moved.Signature != "" || strings.Contains(string(stored), "signature") {
			t.Fatalf("%v %s", err, stored)
		}
	})

	t.Run("checkpoint signed by another actor's key", func(t *testing.T) {
		bad, _ := NewCheckpoint(head, n, at(20, 0), "alice", w.keys["eve"].signer)
		_, err := Check(stream(t, c, "cp-eve", w.lines).Range(ctx, "-", "+"),
			VerifyOptions{AllowedSigners: w.allowed, Checkpoints: []SourcedCheckpoint{{Source: "cp", Checkpoint: bad}}})
		wantVerifyError(t, err, n, "wrong signer")
		bad.Count = 3 // edited after signing
		_, err = Check(records(w.lines), VerifyOptions{Checkpoints: []SourcedCheckpoint{{Source: "cp", Checkpoint: bad}}})
		wantVerifyError(t, err, 3, "bad signature")
	})
}

// TestFreshKeysProveNothing: anyone can sign each forged entry with a new
// key; without allowed_signers the report says so, and stays bounded.
func TestFreshKeysProveNothing(t *testing.T) {
	dir := t.TempDir()
	prev, lines := "", [][]byte(nil)
	for i := range maxKeys + 5 {
		k := newKey(t, dir, "k"+strconv.Itoa(i), "ed25519")
		sealed, stored, err := Entry{ID: "F" + strconv.Itoa(i), Time: at(i, 0), Event: Note, Actor: "alice"}.SealWith(prev, k.signer)
		if err != nil {
			t.Fatal(err)
		}
		prev, lines = sealed.Hash, append(lines, stored)
	}
	rep, err := Check(records(lines), VerifyOptions{})
	if err != nil || rep.KeyCount != maxKeys+5 || len(rep.Keys) != maxKeys || !strings.Contains(rep.Proven[1], "by 25 keys (first: SHA256:") || !strings.Contains(rep.Proven[1], "who holds the keys is unproven") {
		t.Fatalf("%v %d %q", err, rep.KeyCount, rep.Proven)
	}
}

func TestExportEndsWithSignedCheckpoint(t *testing.T) {
	w := newSignedWorld(t)
	var buf strings.Builder
	opts := ExportOptions{Signer: w.keys["carol"].signer, Actor: "carol", Now: func() time.Time { return at(30, 0) }}
	if _, err := ExportWith(&buf, JSONL, records(w.lines), opts); err != nil {
		t.Fatal(err)
	}
	export := []byte(buf.String())
	rep, err := Check(ReadRecords(strings.NewReader(buf.String()), "INC-7.jsonl"), VerifyOptions{AllowedSigners: w.allowed, RequireSignatures: true})
	if err != nil || len(rep.Checkpoints) != 1 || !rep.Checkpoints[0].OK() || rep.Checkpoints[0].Signer != "carol" {
		t.Fatalf("%v %+v", err, rep)
	}
	// Cutting the export's last entry, keeping its checkpoint, is caught.
	lines := strings.Split(strings.TrimSpace(string(export)), "\n")
	cut := strings.Join(append(lines[:len(lines)-2:len(lines)-2], lines[len(lines)-1]), "\n")
	_, err = Check(ReadRecords(strings.NewReader(cut), "cut.jsonl"), VerifyOptions{})
	wantVerifyError(t, err, 11, "entries were cut")
	// An entry after the closing checkpoint is refused.
	after := string(export) + lines[0] + "\n"
	_, err = Check(ReadRecords(strings.NewReader(after), "after.jsonl"), VerifyOptions{})
	wantVerifyError(t, err, 12, "follows the export's closing checkpoint")
}
