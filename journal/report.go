package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"
)

// Report is what the HTML post-incident report shows of the journal: the
// entries of one incident (or of any Filter), who took part, each lever's
// lifetime and the proof that the record was not edited. Charts and key
// times from Prometheus are added by the caller (Report.Charts).
type Report struct {
	Incident, Title string
	Opened, Closed  time.Time // zero when the record has no such entry
	Responders      []string  // declared actors, in order of first appearance
	Playbooks       []string  // "retry-storm (version 3)", in order of first appearance
	Entries         []Entry
	// Signers says, by index in Entries, what each entry's signature
	// proved; an entry absent was not checked (it follows a chain break).
	Signers map[int]EntrySigner
	Spans   []LeverSpan
	Proof   Proof
	Charts  []Chart
	// ChartsNote says why there are no charts at all (--no-charts, no
	// Prometheus); "" when Charts were asked for.
	ChartsNote string
	// Generated is when the report was built (ReportOptions.Now): no
	// chart runs past it.
	Generated time.Time
}

// LeverSpan is one action's hold on a lever, from applied (or restored) to
// released, expired or superseded.
type LeverSpan struct {
	Kind, Target, Value string
	ActionID, Actor     string
	Reason              string
	From, To            time.Time
	// End is how it ended: "released", "expired", "superseded" or, when the
	// record ends with the action still holding the lever, "active".
	End string
}

// Lever is the lane the span is drawn in: "retries checkout->payments".
func (s LeverSpan) Lever() string { return s.Kind + " " + s.Target }

// Proof is what the report can say about the integrity of the record. Checks
// are what Check proved, in order: the chain, the signatures, the
// checkpoints.
type Proof struct {
	// Verification is Check's result over the whole journal read.
	Verification *Verification
	Checks       []ProofCheck
	// Checkpoint is the closing checkpoint of the journal read, as other
	// exports end with; nil, with CheckpointNote saying why, when the chain
	// is broken. CheckpointKey is its signing key's fingerprint.
	Checkpoint                    *Checkpoint
	CheckpointKey, CheckpointNote string
	// Entries is how many entries the report shows; RangeHash is the
	// SHA-256 of their stored forms, each followed by a newline: the
	// sha256sum of `journal export --format jsonl` with the same filter,
	// less the export's closing checkpoint line.
	Entries   int
	RangeHash string
	// FirstHash and LastHash are the chain hashes of the first and last
	// entry shown, which place the range in the chain.
	FirstHash, LastHash string
	// Commands re-run the checks, in a shell.
	Commands []string
}

// ProofCheck is one verification and its result; Skipped says it was not
// made, and Detail why.
type ProofCheck struct {
	Name    string // "hash chain"
	OK      bool
	Skipped bool
	Detail  string // "1234 entries, chain intact, head 3f2a…"
}

// systemActors journal on their own and are not responders.
var systemActors = []string{"stormctl (expiry)"}

// BuildReport reads the whole journal once and verifies it from the first
// entry to head ("" for no head), signatures checked only for validity:
// see BuildReportWith.
func BuildReport(recs iter.Seq2[Record, error], head string, f Filter) (*Report, error) {
	return BuildReportWith(recs, ReportOptions{Head: head, Filter: f})
}

// BuildReportWith reads the whole journal once: it checks it as Check does
// (chain to o.Head, signatures against o.AllowedSigners, a closing
// checkpoint of a saved export), keeps the entries that pass o.Filter with
// their signers, and makes the closing checkpoint of what it read. A broken
// chain is not an error here: it is the report's first proof line, and the
// entries after the break are still shown. A record that cannot be read is
// an error.
func BuildReportWith(recs iter.Seq2[Record, error], o ReportOptions) (*Report, error) {
	r := &Report{Incident: o.Filter.Incident, Generated: time.Now()}
	if o.Now != nil {
		r.Generated = o.Now()
	}
	sum := sha256.New()
	t := &tally{}
	at := map[string]int{} // entry hash → index in r.Entries
	var unreadable []string
	collect := func(rec Record) {
		if !t.see(rec.Data) {
			return
		}
		var e Entry
		if err := json.Unmarshal(rec.Data, &e); err != nil {
			unreadable = append(unreadable, rec.Pos)
			return
		}
		if !o.Filter.Match(e) {
			return
		}
		sum.Write(rec.Data)
		sum.Write([]byte{'\n'})
		at[e.Hash] = len(r.Entries)
		r.add(e)
	}
	next, stop := iter.Pull2(recs)
	defer stop()
	// Check sees every record; the records after a break are read here.
	seq := func(yield func(Record, error) bool) {
		for {
			rec, err, ok := next()
			if !ok {
				return
			}
			if err == nil {
				collect(rec)
			}
			if !yield(rec, err) {
				return
			}
		}
	}
	vo := o.verifyOptions()
	vo.OnEntry = func(res EntryResult) {
		if i, ok := at[res.Entry.Hash]; ok {
			r.Signers[i] = signerOf(res, o.RequireSignatures)
		}
	}
	r.Signers = make(map[int]EntrySigner)
	v, verr := Check(seq, vo)
	for {
		rec, err, ok := next()
		if !ok {
			break
		}
		if err != nil {
			return nil, err
		}
		collect(rec)
	}
	if _, broken := verr.(*VerifyError); verr != nil && !broken {
		return nil, verr
	}
	r.Proof.Verification = v
	r.Proof.Checks = proofChecks(v, o.RequireSignatures)
	if len(unreadable) > 0 {
		r.Proof.Checks = append(r.Proof.Checks, ProofCheck{Name: "readable records",
			Detail: fmt.Sprintf("%d records are not journal entries and are not shown: %s", len(unreadable), strings.Join(unreadable[:min(5, len(unreadable))], ", "))})
	}
	if err := r.Proof.close(t, o, v); err != nil {
		return nil, err
	}
	r.Proof.Entries = len(r.Entries)
	r.Proof.RangeHash = hex.EncodeToString(sum.Sum(nil))
	if len(r.Entries) > 0 {
		r.Proof.FirstHash, r.Proof.LastHash = r.Entries[0].Hash, r.Entries[len(r.Entries)-1].Hash
	}
	r.spans()
	return r, nil
}

func (r *Report) add(e Entry) {
	r.Entries = append(r.Entries, e)
	switch e.Event {
	case IncidentOpened:
		if r.Opened.IsZero() {
			r.Opened = e.Time
		}
		if r.Title == "" {
			r.Title = firstNonEmpty(e.Reason, e.Value)
		}
		if r.Incident == "" {
			r.Incident = e.Incident
		}
	case IncidentClosed:
		r.Closed = e.Time
	}
	if e.Actor != "" && !slices.Contains(systemActors, e.Actor) && !slices.Contains(r.Responders, e.Actor) {
		r.Responders = append(r.Responders, e.Actor)
	}
	if e.Playbook != "" {
		pb := e.Playbook
		if e.PlaybookVersion != "" {
			pb += " (version " + e.PlaybookVersion + ")"
		}
		if !slices.Contains(r.Playbooks, pb) {
			r.Playbooks = append(r.Playbooks, pb)
		}
	}
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

// Window is the time the entries span; zero times when there are none.
func (r *Report) Window() (from, to time.Time) {
	if len(r.Entries) == 0 {
		return
	}
	from, to = r.Entries[0].Time, r.Entries[len(r.Entries)-1].Time
	for _, e := range r.Entries {
		from, to = minTime(from, e.Time), maxTime(to, e.Time)
	}
	for _, s := range r.Spans {
		to = maxTime(to, s.To)
	}
	return from, to
}

// spans follows each action from the entry that gave it the lever to the
// one that took the lever away, as the Markdown timeline does.
func (r *Report) spans() {
	open := map[string]int{} // action id → index in r.Spans
	end := func(id string, t time.Time, how string) {
		if i, ok := open[id]; ok {
			r.Spans[i].To, r.Spans[i].End = t, how
			delete(open, id)
		}
	}
	hold := func(e Entry, s LeverState) {
		if _, ok := open[s.ActionID]; ok {
			return
		}
		open[s.ActionID] = len(r.Spans)
		r.Spans = append(r.Spans, LeverSpan{Kind: e.Kind, Target: e.Target, Value: s.Value, ActionID: s.ActionID,
			Actor: s.Actor, Reason: s.Reason, From: e.Time, To: s.ExpiresAt, End: "active"})
	}
	for _, e := range r.Entries {
		switch e.Event {
		case ActionApplied:
			if p := e.Previous; p != nil {
				end(p.ActionID, e.Time, "superseded")
			}
			if e.New != nil {
				hold(e, *e.New)
			}
		case ActionReleased, ActionExpired:
			if p := e.Previous; p != nil {
				end(p.ActionID, e.Time, strings.TrimPrefix(string(e.Event), "action."))
			}
			if e.New != nil {
				hold(e, *e.New)
			}
		case ActionExtended:
			if n := e.New; n != nil {
				if i, ok := open[n.ActionID]; ok {
					r.Spans[i].To = n.ExpiresAt
				}
			}
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
