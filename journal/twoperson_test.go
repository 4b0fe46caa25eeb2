package journal

import (
	"strings"
	"testing"
)

// An allowed_signers file that lists one key for alice and bob lets one
// person sign a request as alice and its approval as bob: every signature
// verifies, and TwoPerson reports the approval. Different keys pass; an
// unsigned approval of a signed request is reported.
func TestTwoPersonNeedsTwoKeys(t *testing.T) {
	dir := t.TempDir()
	shared, bob := newKey(t, dir, "shared", "ed25519"), newKey(t, dir, "bob", "ed25519")
	_, allowed := allowedFile(t, dir, "alice,bob "+shared.pub, "bob "+bob.pub)
	chain := func(approver Signer) *TwoPerson {
		// An unsigned approval by bob, who holds a key, is itself a problem
		// for Check; AllowUnsigned lets TwoPerson's own report be seen.
		var lines [][]byte
		prev := ""
		for _, step := range []struct {
			e      Entry
			signer Signer
		}{
			{Entry{Event: ActionRequested, Actor: "alice", ActionID: "A1", Kind: "autoscaling", Target: "checkout"}, shared.signer},
			{Entry{Event: ActionApproved, Actor: "bob", ActionID: "A1", Kind: "autoscaling", Target: "checkout"}, approver},
			{Entry{Event: ActionApplied, Actor: "bob", ActionID: "A1", Kind: "autoscaling", Target: "checkout"}, approver},
		} {
			sealed, stored, err := step.e.SealWith(prev, step.signer)
			if err != nil {
				t.Fatal(err)
			}
			prev, lines = sealed.Hash, append(lines, stored)
		}
		tp := NewTwoPerson()
		if _, err := Check(records(lines), VerifyOptions{AllowedSigners: allowed, AllowUnsigned: approver == nil, OnEntry: tp.Observe}); err != nil {
			t.Fatal(err)
		}
		return tp
	}
	if tp := chain(shared.signer); len(tp.Problems) != 1 || tp.Problems[0].Index != 2 ||
		!strings.Contains(tp.Problems[0].String(), "action A1 was requested and approved with the same key") {
		t.Fatalf("same key: %+v", tp.Problems)
	}
	if tp := chain(bob.signer); len(tp.Problems) != 0 {
		t.Fatalf("two keys: %+v", tp.Problems)
	}
	if tp := chain(nil); len(tp.Problems) != 1 || !strings.Contains(tp.Problems[0].Detail, "its approval is not") {
		t.Fatalf("unsigned approval: %+v", tp.Problems)
	}
}
