// Package journal is stormctl's hash-chained record of everything done to
// the control plane: entries, their canonical form and chain hash, the Redis
// stream reader, the local pending file used while Redis is unreachable,
// verification and the post-incident exporters.
package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/oklog/ulid/v2"
)

// Event says what an entry records.
type Event string

// Journal events.
const (
	ActionPlanned    Event = "action.planned"
	ActionApplied    Event = "action.applied"
	ActionRefused    Event = "action.refused"
	ActionReleased   Event = "action.released"
	ActionExtended   Event = "action.extended"
	ActionExpired    Event = "action.expired"
	ActionRequested  Event = "action.requested"
	ActionApproved   Event = "action.approved"
	IncidentOpened   Event = "incident.opened"
	IncidentClosed   Event = "incident.closed"
	Note             Event = "note"
	PlaybookStarted  Event = "playbook.started"
	PlaybookPassed   Event = "playbook.step.passed"
	PlaybookFailed   Event = "playbook.step.failed"
	PlaybookSkipped  Event = "playbook.step.skipped"
	PlaybookFinished Event = "playbook.finished"
	// AlertFired is journaled by the alert receiver (alerts.AlertFired)
	// when an alert fires; the report dates detection by the first.
	AlertFired Event = "alert.fired"
	// ControlPlaneLost records that the journal went back (a failover to a
	// replica that had not caught up): its Outcome names the missing range.
	ControlPlaneLost Event = "controlplane.lost"
)

// AdHoc is the Step of an entry made outside any playbook.
const AdHoc = "ad-hoc"

// NoACLNote is the RedisUserNote of entries written through a server that
// cannot say who is authenticated (no ACL WHOAMI).
const NoACLNote = "server has no ACL support; declared actor only"

// Entry is one journal record. Its canonical form is encoding/json's
// marshalling of this struct (fields in declaration order, empty optional
// fields omitted, times in RFC 3339 UTC) with Hash empty, and therefore
// absent; Hash is hex(SHA-256(canonical form)). PrevHash is the Hash of the
// entry before it in the chain ("" for the first), so editing, deleting,
// reordering or inserting an entry breaks a hash or a link. The stored form
// is the same marshalling with Hash filled in, and Signature when the
// writer signed it: an SSHSIG signature of the canonical form (SealWith).
type Entry struct {
	ID            string    `json:"id"`
	Time          time.Time `json:"time"`
	Event         Event     `json:"event"`
	Actor         string    `json:"actor"`
	RedisUser     string    `json:"redis_user,omitempty"`
	RedisUserNote string    `json:"redis_user_note,omitempty"`
	// RunBy is who started an unattended run written as the automation
	// actor, as declared by the process ($SUDO_USER or $USER).
	RunBy           string      `json:"run_by,omitempty"`
	Incident        string      `json:"incident,omitempty"`
	Playbook        string      `json:"playbook,omitempty"`
	Step            string      `json:"step,omitempty"`
	PlaybookVersion string      `json:"playbook_version,omitempty"`
	ActionID        string      `json:"action_id,omitempty"`
	Kind            string      `json:"kind,omitempty"`
	Target          string      `json:"target,omitempty"`
	Value           string      `json:"value,omitempty"`
	TTL             Duration    `json:"ttl,omitempty"`
	Reason          string      `json:"reason,omitempty"`
	Forced          bool        `json:"forced,omitempty"`
	Evidence        []Evidence  `json:"evidence,omitempty"`
	Previous        *LeverState `json:"previous,omitempty"`
	New             *LeverState `json:"new,omitempty"`
	Outcome         string      `json:"outcome,omitempty"`
	Error           string      `json:"error,omitempty"`
	// Object and Changes say what an actuator really changed outside the
	// control plane (actuation.* events): "hpa/checkout in shop" and each
	// field before and after.
	Object  string        `json:"object,omitempty"`
	Changes []FieldChange `json:"changes,omitempty"`
	// Offline marks an entry recorded in the local pending file while Redis
	// was unreachable and chained later by `journal sync`; its ID and Time
	// are those of the original attempt.
	Offline bool `json:"offline,omitempty"`
	// Restores names the acknowledged entry a failover lost that this
	// entry re-applies (`journal sync`), written by another actor perhaps.
	Restores *Restored `json:"restores,omitempty"`
	PrevHash string    `json:"prev_hash"`
	Hash     string    `json:"hash,omitempty"`
	// Signature is the armored SSHSIG signature (namespace stormctl-journal)
	// of the canonical form by the writer's key; "" when unsigned.
	Signature string `json:"signature,omitempty"`
}

// Restored is the lost entry a `journal sync` entry re-applies: its id,
// event and actor, as this machine's written record kept them.
type Restored struct {
	Entry string `json:"entry"`
	Event Event  `json:"event"`
	Actor string `json:"actor"`
}

// Evidence is one saved-query result that supported (or failed to support)
// an action. Value must be finite: a query without data has Status "no data".
type Evidence struct {
	Query string  `json:"query"`
	Pack  string  `json:"pack,omitempty"`
	Value float64 `json:"value"`
	// ValueText is "+Inf", "-Inf" or "NaN" when Prometheus answered one,
	// which JSON cannot hold: Value is then ±MaxFloat64 (or 0 for NaN).
	ValueText string    `json:"value_text,omitempty"`
	Threshold string    `json:"threshold,omitempty"`
	Status    string    `json:"status"`
	Time      time.Time `json:"time"`
}

// LeverState is a lever as the journal records it before and after a write.
// Kind and target are on the entry.
type LeverState struct {
	Value     string    `json:"value"`
	ActionID  string    `json:"action_id"`
	Actor     string    `json:"actor"`
	Reason    string    `json:"reason,omitempty"`
	Incident  string    `json:"incident,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	Version   int64     `json:"version"`
}

// Duration is a time.Duration written as "30m0s".
type Duration time.Duration

// MarshalText writes the Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = Duration(v)
	return err
}

// String is the Go duration string, "" for zero.
func (d Duration) String() string {
	if d == 0 {
		return ""
	}
	return time.Duration(d).String()
}

// NewID returns a new entry or action id: a ULID, sortable by creation time.
func NewID() string { return ulid.Make().String() }

// Canonical returns the entry's canonical JSON: the entry with Hash and
// Signature empty. It is what the hash and the signature are computed over.
func (e Entry) Canonical() ([]byte, error) {
	for _, ev := range e.Evidence {
		if math.IsNaN(ev.Value) || math.IsInf(ev.Value, 0) {
			return nil, fmt.Errorf("journal entry %s: evidence %q has non-finite value %v", e.ID, ev.Query, ev.Value)
		}
	}
	e.Hash, e.Signature = "", ""
	return json.Marshal(e)
}

// Seal fills in defaults (ID, Time in UTC), links the entry to prev and sets
// its Hash, unsigned (SealWith signs). It returns the sealed entry and its stored form.
func (e Entry) Seal(prev string) (Entry, []byte, error) {
	if e.ID == "" {
		e.ID = NewID()
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	e.Time = e.Time.UTC()
	// A signature of the entry at another place in the chain is void.
	e.PrevHash, e.Signature = prev, ""
	canon, err := e.Canonical()
	if err != nil {
		return Entry{}, nil, err
	}
	e.Hash = hashOf(canon)
	stored, err := json.Marshal(e)
	return e, stored, err
}

// errNotCanonical is the cause when stored bytes are not what the entry
// they decode to would marshal to: the record was edited by hand.
var errNotCanonical = errors.New("not in canonical form")

// Parse decodes a stored entry strictly and checks its own hash: unknown
// fields, a non-canonical encoding or a hash that does not match its
// content are errors. Chain links and signatures are checked by Check.
func Parse(data []byte) (Entry, error) {
	e, _, err := parse(data)
	return e, err
}

// parse is Parse, also returning the canonical form (the signed bytes).
func parse(data []byte) (Entry, []byte, error) {
	var e Entry
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return Entry{}, nil, fmt.Errorf("decode entry: %w", err)
	}
	if dec.More() {
		return Entry{}, nil, fmt.Errorf("decode entry: trailing data")
	}
	again, err := json.Marshal(e)
	if err != nil {
		return Entry{}, nil, fmt.Errorf("entry %s: %w", e.ID, err)
	}
	if !bytes.Equal(again, bytes.TrimSpace(data)) {
		return e, nil, fmt.Errorf("entry %s: %w", e.ID, errNotCanonical)
	}
	canon, err := e.Canonical()
	if err != nil {
		return e, nil, err
	}
	if got := hashOf(canon); got != e.Hash {
		return e, nil, fmt.Errorf("entry %s: hash %.12s… does not match its content (%.12s…)", e.ID, e.Hash, got)
	}
	return e, canon, nil
}
