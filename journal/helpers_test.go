package journal

import (
	"bytes"
	"iter"
	"strconv"
	"testing"
	"time"
)

var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func at(min, sec int) time.Time {
	return t0.Add(time.Duration(min)*time.Minute + time.Duration(sec)*time.Second)
}

func lever(value, id, actor string, created time.Time, ttl time.Duration, version int64) *LeverState {
	return &LeverState{Value: value, ActionID: id, Actor: actor, Reason: "storm", Incident: "INC-7",
		CreatedAt: created, ExpiresAt: created.Add(ttl), Version: version}
}

// scriptedIncident is a retry storm handled by two responders: an incident,
// a playbook step, a forced breaker, a refused conflict, a supersede,
// a release restoring the earlier action and an expiry.
func scriptedIncident() []Entry {
	amp := []Evidence{{Query: "amplification", Pack: "envoy", Value: 3.2, Threshold: "> 1.3", Status: "firing", Time: at(0, 50)}}
	retOff := lever("off", "A1", "alice", at(1, 0), 30*time.Minute, 1)
	retCap := lever("cap:2", "A2", "bob", at(5, 0), 20*time.Minute, 2)
	restored := *retOff
	restored.Version = 3
	brk := lever("open", "B1", "bob", at(2, 0), 10*time.Minute, 1)
	base := Entry{Incident: "INC-7", RedisUser: "responder"}
	with := func(e Entry) Entry {
		e.Incident, e.RedisUser = base.Incident, base.RedisUser
		if e.Step == "" && e.Playbook == "" {
			e.Step = AdHoc
		}
		return e
	}
	return []Entry{
		with(Entry{ID: "E01", Time: at(0, 30), Event: IncidentOpened, Actor: "alice", Value: "checkout 5xx; payments p99 4s"}),
		with(Entry{ID: "E02", Time: at(0, 40), Event: PlaybookStarted, Actor: "alice", Playbook: "retry-storm", PlaybookVersion: "3", Step: "start"}),
		with(Entry{ID: "E03", Time: at(1, 0), Event: ActionApplied, Actor: "alice", Playbook: "retry-storm", PlaybookVersion: "3", Step: "retries-off",
			ActionID: "A1", Kind: "retries", Target: "checkout->payments", Value: "off", TTL: Duration(30 * time.Minute),
			Reason: "amplification 3.2 | rising", Evidence: amp, New: retOff, Outcome: "applied"}),
		with(Entry{ID: "E04", Time: at(1, 5), Event: PlaybookPassed, Actor: "alice", Playbook: "retry-storm", PlaybookVersion: "3", Step: "retries-off"}),
		with(Entry{ID: "E05", Time: at(2, 0), Event: ActionApplied, Actor: "bob", ActionID: "B1", Kind: "breaker", Target: "payments",
			Value: "open", TTL: Duration(10 * time.Minute), Reason: "p99 above timeout", Forced: true, New: brk, Outcome: "applied"}),
		with(Entry{ID: "E06", Time: at(3, 0), Event: ActionRefused, Actor: "carol", Kind: "breaker", Target: "payments", Value: "open",
			Reason: "same idea", Previous: brk, Outcome: "conflict", Error: "breaker:payments is held by action B1 of bob"}),
		with(Entry{ID: "E07", Time: at(5, 0), Event: ActionApplied, Actor: "bob", ActionID: "A2", Kind: "retries", Target: "checkout->payments",
			Value: "cap:2", TTL: Duration(20 * time.Minute), Reason: "let some retries through", Previous: retOff, New: retCap, Outcome: "applied"}),
		with(Entry{ID: "E08", Time: at(8, 0), Event: Note, Actor: "alice", Reason: "payments recovering\nerror rate 2%"}),
		with(Entry{ID: "E09", Time: at(9, 0), Event: ActionReleased, Actor: "bob", ActionID: "A2", Kind: "retries", Target: "checkout->payments",
			Value: "cap:2", Reason: "cap not needed", Previous: retCap, New: &restored, Outcome: "released; restored action A1"}),
		with(Entry{ID: "E10", Time: at(12, 0), Event: ActionExpired, Actor: "stormctl (expiry)", ActionID: "B1", Kind: "breaker",
			Target: "payments", Value: "open", Reason: "its TTL ran out", Previous: brk, Outcome: "expired"}),
		with(Entry{ID: "E11", Time: at(15, 0), Event: IncidentClosed, Actor: "alice"}),
	}
}

// chain seals entries in order and returns their stored forms.
func chain(t testing.TB, entries []Entry) [][]byte {
	t.Helper()
	return chainSigned(t, entries, nil)
}

// chainSigned seals entries in order, each signed by signer (nil: none).
func chainSigned(t testing.TB, entries []Entry, signer Signer) [][]byte {
	t.Helper()
	prev := ""
	out := make([][]byte, len(entries))
	for i, e := range entries {
		sealed, stored, err := e.SealWith(prev, signer)
		if err != nil {
			t.Fatal(err)
		}
		prev, out[i] = sealed.Hash, stored
	}
	return out
}

func jsonl(lines [][]byte) []byte { return append(bytes.Join(lines, []byte("\n")), '\n') }

func records(lines [][]byte) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		for i, l := range lines {
			if !yield(Record{Pos: "line " + strconv.Itoa(i+1), Data: l}, nil) {
				return
			}
		}
	}
}
