package journal

import "fmt"

// ProblemSameSigner is an approval signed with the key that signed its
// request: one key vouched for both persons.
const ProblemSameSigner = "approved with the requester's key"

// maxTwoPersonRequests bounds the requests TwoPerson remembers.
const maxTwoPersonRequests = 100_000

// TwoPerson checks the two-person rule on a signed journal: fed every
// entry a verification proved (VerifyOptions.OnEntry), it reports each
// action.approved entry signed with the same key as the action.requested
// entry of its action, or left unsigned when its request was signed. An
// allowed_signers file that lists one key for two principals would
// otherwise let one person request and approve.
type TwoPerson struct {
	requests map[string]string // action id → fingerprint of the request's key
	// Problems are the approvals that do not prove a second person.
	Problems []EntryProblem
}

// NewTwoPerson returns an empty check.
func NewTwoPerson() *TwoPerson { return &TwoPerson{requests: map[string]string{}} }

// Observe takes one entry's verification result, in journal order.
func (t *TwoPerson) Observe(r EntryResult) {
	e := r.Entry
	if e.ActionID == "" || (e.Event != ActionRequested && e.Event != ActionApproved) {
		return
	}
	key := ""
	if r.Status == StatusVerified {
		if sig, err := parseSignature(e.Signature); err == nil {
			key = keyName(sig.PublicKey)
		}
	}
	if e.Event == ActionRequested {
		if key != "" && len(t.requests) < maxTwoPersonRequests {
			t.requests[e.ActionID] = key
		}
		return
	}
	req, signed := t.requests[e.ActionID]
	switch {
	case !signed:
	case key == "":
		t.problem(r, fmt.Sprintf("request of action %s was signed by an allowed key (%s), its approval is not", e.ActionID, req))
	case key == req:
		t.problem(r, fmt.Sprintf("action %s was requested and approved with the same key %s", e.ActionID, key))
	}
}

func (t *TwoPerson) problem(r EntryResult, detail string) {
	if len(t.Problems) < maxProblems {
		t.Problems = append(t.Problems, EntryProblem{Index: r.Index, Pos: r.Pos, ID: r.Entry.ID, Actor: r.Entry.Actor,
			Problem: ProblemSameSigner, Detail: detail})
	}
}
