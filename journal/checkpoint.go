package journal

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"time"

	"github.com/stormctl/stormctl/internal/yamlfile"
)

// CheckpointVersion is the format version in the "checkpoint" field.
const CheckpointVersion = 1

// Checkpoint records that the journal, read at Time, had Count entries and
// ended at Head. Kept outside Redis, a signed checkpoint lets verify detect
// entries cut from the end, and any rewriting before it, even by someone
// who can write Redis. Its canonical form is encoding/json's marshalling
// with Signature empty (and absent), which begins {"checkpoint":1, so that
// a checkpoint line is never mistaken for an entry; Signature is the
// SSHSIG signature (namespace stormctl-journal) of the canonical form by
// Actor's key.
type Checkpoint struct {
	Version int       `json:"checkpoint"`
	Head    string    `json:"head"`
	Count   int       `json:"count"`
	Time    time.Time `json:"time"`
	Actor   string    `json:"actor,omitempty"`
	// Unsigned marks a checkpoint written without a signing key, so that a
	// reader sees at once that it is only as good as the place it is kept.
	Unsigned  bool   `json:"unsigned,omitempty"`
	Signature string `json:"signature,omitempty"`
}

// checkpointPrefix starts every checkpoint's JSON, and no entry's.
var checkpointPrefix = []byte(`{"checkpoint":`)

// IsCheckpoint reports whether a record is a checkpoint rather than an
// entry (exports end with one).
func IsCheckpoint(data []byte) bool { return bytes.HasPrefix(bytes.TrimSpace(data), checkpointPrefix) }

// NewCheckpoint makes the checkpoint of a journal of count entries ending
// at head, at time at, by actor, signed by signer (nil: unsigned).
func NewCheckpoint(head string, count int, at time.Time, actor string, signer Signer) (Checkpoint, error) {
	c := Checkpoint{Version: CheckpointVersion, Head: head, Count: count, Time: at.UTC().Truncate(time.Second), Actor: actor}
	if signer == nil {
		c.Unsigned = true
		return c, nil
	}
	sig, err := signer.Sign(c.Canonical())
	if err != nil {
		return Checkpoint{}, fmt.Errorf("sign checkpoint: %w", err)
	}
	c.Signature = sig
	return c, nil
}

// Canonical is the checkpoint's signed form.
func (c Checkpoint) Canonical() []byte {
	c.Signature = ""
	b, _ := json.Marshal(c) // a struct of strings, an int and a time cannot fail
	return b
}

// JSON is the checkpoint's stored form, one line.
func (c Checkpoint) JSON() []byte {
	b, _ := json.Marshal(c)
	return b
}

// ParseCheckpoint decodes one checkpoint strictly.
func ParseCheckpoint(data []byte) (Checkpoint, error) {
	var c Checkpoint
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Checkpoint{}, fmt.Errorf("decode checkpoint: %w", err)
	}
	if dec.More() {
		return Checkpoint{}, errors.New("decode checkpoint: trailing data")
	}
	switch {
	case c.Version != CheckpointVersion:
		return c, fmt.Errorf("checkpoint version %d, want %d", c.Version, CheckpointVersion)
	case c.Count < 0:
		return c, fmt.Errorf("checkpoint count %d is negative", c.Count)
	case c.Count > 0 && len(c.Head) != 64:
		return c, fmt.Errorf("checkpoint head %q is not a SHA-256 hash", c.Head)
	case c.Unsigned && c.Signature != "":
		return c, errors.New("checkpoint is marked unsigned but carries a signature")
	}
	return c, nil
}

// reportCheckpointTag opens the HTML report's checkpoint (report.html.tmpl).
const reportCheckpointTag = `<pre class="mono" id="checkpoint">`

// ReadCheckpoint reads the checkpoint in the file at path: a file written
// by `journal checkpoint`, or an export (jsonl, md, csv or html), whose last
// checkpoint it takes.
func ReadCheckpoint(path string) (Checkpoint, error) {
	// An export of a long journal may be larger than any config file.
	lim := yamlfile.DefaultLimits()
	lim.MaxBytes *= 16
	data, err := yamlfile.ReadFile(path, lim)
	if err != nil {
		return Checkpoint{}, err
	}
	var found []byte
	line, at := 0, 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	inReport := false
	for sc.Scan() {
		line++
		switch {
		case IsCheckpoint(sc.Bytes()):
			found, at = bytes.TrimSpace(sc.Bytes()), line
		case inReport:
			// An HTML report holds its checkpoint, HTML-escaped, on the line
			// after this tag, which no escaped journal text can forge.
			found, at = []byte(html.UnescapeString(string(bytes.TrimSpace(sc.Bytes())))), line
		}
		inReport = string(bytes.TrimSpace(sc.Bytes())) == reportCheckpointTag
	}
	if found == nil {
		found = csvCheckpoint(data)
	}
	if found == nil {
		return Checkpoint{}, fmt.Errorf("%s: no checkpoint in the file (want the output of journal checkpoint, or an export)", path)
	}
	c, err := ParseCheckpoint(found)
	if err != nil {
		return c, fmt.Errorf("%s:%d:%d: %w", path, at, jsonColumn(err), err)
	}
	return c, nil
}

// jsonColumn is the 1-based column a JSON decoding error points at, 1
// when it names none.
func jsonColumn(err error) int {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return int(syn.Offset)
	case errors.As(err, &typ):
		return int(typ.Offset)
	}
	return 1
}

// csvCheckpoint is the checkpoint in the last row of a CSV export.
func csvCheckpoint(data []byte) []byte {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	var last []byte
	for {
		row, err := r.Read()
		if err == io.EOF || (err != nil && !errors.Is(err, csv.ErrFieldCount)) {
			return last
		}
		if len(row) == len(csvHeader) && row[2] == checkpointEvent && IsCheckpoint([]byte(row[12])) {
			last = []byte(row[12])
		}
	}
}

// checkpointEvent is the event column of the CSV checkpoint row.
const checkpointEvent = "journal.checkpoint"
