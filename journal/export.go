package journal

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/sanitize"
)

// Format is an export format.
type Format string

// Export formats.
const (
	Markdown Format = "md"
	CSV      Format = "csv"
	JSONL    Format = "jsonl"
	HTML     Format = "html"
)

// ParseFormat validates a --format value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case Markdown, CSV, JSONL, HTML:
		return f, nil
	}
	return "", fmt.Errorf("unknown export format %q (want md, csv, jsonl or html)", s)
}

// Filter selects entries to export; zero fields select everything.
type Filter struct {
	Incident string
	Actor    string
	Since    time.Time // inclusive
	Until    time.Time // exclusive
}

// Match reports whether e passes the filter.
func (f Filter) Match(e Entry) bool {
	return (f.Incident == "" || e.Incident == f.Incident) &&
		(f.Actor == "" || e.Actor == f.Actor || e.RedisUser == f.Actor) &&
		(f.Since.IsZero() || !e.Time.Before(f.Since)) &&
		(f.Until.IsZero() || e.Time.Before(f.Until))
}

// ParseTime reads a --since/--until value: RFC 3339 ("2024-05-01T12:00:00Z"),
// a date ("2024-05-01", UTC midnight) or a duration before now ("90m").
func ParseTime(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("invalid time %q: want RFC 3339 (2024-05-01T12:00:00Z), a date (2024-05-01) or a duration ago (90m)", s)
}

// Export writes the records that pass f in format, streaming: memory does
// not grow with the journal, except for HTML, which holds the entries it
// shows (and draws no charts here: see BuildReport and WriteHTML). It ends
// with an unsigned checkpoint of the journal read (ExportWith signs it) and
// returns how many entries it wrote.
func Export(w io.Writer, format Format, recs iter.Seq2[Record, error], f Filter) (int, error) {
	return ExportWith(w, format, recs, ExportOptions{Filter: f})
}

// ExportOptions configure ExportWith.
type ExportOptions struct {
	Filter Filter
	// Signer signs the closing checkpoint as Actor; nil leaves it unsigned.
	Signer Signer
	Actor  string
	// Now is the checkpoint's time; nil is time.Now.
	Now func() time.Time
}

// ExportWith writes the records that pass o.Filter in format, then the
// checkpoint of the journal read — every record read, exported or filtered
// out, so that `journal verify --checkpoint` of the export detects anything
// later cut from or rewritten in the journal up to it. A checkpoint already
// in the records (an export being re-exported) is dropped for the new one.
func ExportWith(w io.Writer, format Format, recs iter.Seq2[Record, error], o ExportOptions) (int, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	var n int
	var err error
	t := &tally{}
	if format != HTML {
		// The report checks a closing checkpoint in the records itself.
		recs = t.count(recs)
	}
	switch format {
	case JSONL:
		n, err = exportJSONL(bw, recs, o.Filter)
	case CSV:
		n, err = exportCSV(bw, Entries(recs), o.Filter, t, o)
	case Markdown:
		n, err = exportMarkdown(bw, Entries(recs), o.Filter)
	case HTML:
		n, err = exportHTML(bw, recs, o)
	default:
		_, err = ParseFormat(string(format))
	}
	// CSV writes its checkpoint as a row; HTML shows it in its proof.
	if err == nil && format != CSV && format != HTML {
		err = t.write(bw, format, o)
	}
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return n, err
}

// tally counts the entries read and remembers the last hash.
type tally struct {
	n    int
	head string
}

// count passes the entry records through, counting them, and drops
// checkpoint records.
func (t *tally) count(recs iter.Seq2[Record, error]) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		for rec, err := range recs {
			if err == nil && !t.see(rec.Data) {
				continue
			}
			if !yield(rec, err) {
				return
			}
		}
	}
}

// see counts an entry record and reports true, or reports false for a
// checkpoint record, which is not counted.
func (t *tally) see(data []byte) bool {
	if IsCheckpoint(data) {
		return false
	}
	t.n++
	t.head = storedHash(data)
	return true
}

// hashField precedes the hash in a stored entry. Inside a JSON string a
// quote is escaped, so the last occurrence is the field itself.
var hashField = []byte(`,"hash":"`)

// storedHash is the hash field of a stored entry, without decoding it.
func storedHash(data []byte) string {
	i := bytes.LastIndex(data, hashField)
	if i < 0 {
		return ""
	}
	rest := data[i+len(hashField):]
	if j := bytes.IndexByte(rest, '"'); j >= 0 {
		return string(rest[:j])
	}
	return ""
}

// checkpoint makes the closing checkpoint of what was read.
func (t *tally) checkpoint(o ExportOptions) (Checkpoint, error) {
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	return NewCheckpoint(t.head, t.n, now(), o.Actor, o.Signer)
}

// write ends a JSON Lines or Markdown export with its checkpoint.
func (t *tally) write(w io.Writer, format Format, o ExportOptions) error {
	cp, err := t.checkpoint(o)
	if err != nil {
		return err
	}
	if format == JSONL {
		_, err = fmt.Fprintf(w, "%s\n", cp.JSON())
		return err
	}
	signed := "unsigned"
	if cp.Signature != "" {
		signed = "signed by " + clean(cp.Actor)
	}
	read := "an empty journal"
	if cp.Count > 0 {
		read = fmt.Sprintf("a journal of %d entries ending at `%.12s`", cp.Count, cp.Head)
	}
	_, err = fmt.Fprintf(w, "\n## Checkpoint\n\nExported from %s, at %s UTC (%s). "+
		"Keep this file: `stormctl journal verify --checkpoint FILE` then detects any entry up to there cut or rewritten.\n\n```json\n%s\n```\n",
		read, cp.Time.UTC().Format(mdTime), signed, cp.JSON())
	return err
}

// exportJSONL copies the stored records unchanged, so an unfiltered export
// verifies like the stream it came from.
func exportJSONL(w *bufio.Writer, recs iter.Seq2[Record, error], f Filter) (int, error) {
	filtered := f != Filter{}
	n := 0
	for rec, err := range recs {
		if err != nil {
			return n, err
		}
		if filtered {
			var e Entry
			if err := json.Unmarshal(rec.Data, &e); err != nil {
				return n, fmt.Errorf("journal record at %s: %w", rec.Pos, err)
			}
			if !f.Match(e) {
				continue
			}
		}
		w.Write(rec.Data)
		if err := w.WriteByte('\n'); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// csvHeader are the CSV columns, one per entry field; evidence and lever
// states are flattened to text.
var csvHeader = []string{"id", "time", "event", "actor", "redis_user", "incident", "playbook", "step",
	"playbook_version", "action_id", "kind", "target", "value", "ttl", "reason", "forced", "evidence",
	"previous", "new", "outcome", "error", "offline", "prev_hash", "hash"}

func exportCSV(w io.Writer, entries iter.Seq2[Entry, error], f Filter, t *tally, o ExportOptions) (int, error) {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return 0, err
	}
	n, err := each(entries, f, func(e Entry) error {
		user := e.RedisUser
		if user == "" {
			user = e.RedisUserNote
		}
		row := []string{e.ID, e.Time.UTC().Format(time.RFC3339Nano), string(e.Event), e.Actor, user, e.Incident,
			e.Playbook, e.Step, e.PlaybookVersion, e.ActionID, e.Kind, e.Target, e.Value, e.TTL.String(), e.Reason,
			strconv.FormatBool(e.Forced), evidenceText(e.Evidence, "; "), e.Previous.text(), e.New.text(),
			e.Outcome, e.Error, strconv.FormatBool(e.Offline), e.PrevHash, e.Hash}
		for i, c := range row {
			row[i] = sanitize.CSVCell(c) // no control characters, no formulas
		}
		return cw.Write(row)
	})
	if err != nil {
		return n, err
	}
	// The last row is the checkpoint, its JSON in the value column.
	cp, err := t.checkpoint(o)
	if err != nil {
		return n, err
	}
	row := make([]string, len(csvHeader))
	row[0], row[1], row[2], row[3], row[12], row[23] = "checkpoint", cp.Time.Format(time.RFC3339), checkpointEvent, cp.Actor, string(cp.JSON()), cp.Head
	if err := cw.Write(row); err != nil {
		return n, err
	}
	cw.Flush()
	return n, cw.Error()
}

// each calls fn for every entry that passes f and counts them.
func each(entries iter.Seq2[Entry, error], f Filter, fn func(Entry) error) (int, error) {
	n := 0
	for e, err := range entries {
		if err != nil {
			return n, err
		}
		if !f.Match(e) {
			continue
		}
		if err := fn(e); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// evidenceText is "amplification[envoy]=3.2 (> 1.3, firing)", joined by sep.
func evidenceText(ev []Evidence, sep string) string {
	parts := make([]string, len(ev))
	for i, x := range ev {
		name := x.Query
		if x.Pack != "" {
			name += "[" + x.Pack + "]"
		}
		detail := strings.TrimSpace(strings.Join([]string{x.Threshold, x.Status}, ", "))
		detail = strings.Trim(detail, ", ")
		parts[i] = fmt.Sprintf("%s=%s (%s)", name, strconv.FormatFloat(x.Value, 'g', 4, 64), detail)
	}
	return strings.Join(parts, sep)
}

// text is "off by alice (action 01H…, until 12:30:00Z)", "" for nil.
func (s *LeverState) text() string {
	if s == nil {
		return ""
	}
	return fmt.Sprintf("%s by %s (action %s, v%d, until %s)", s.Value, s.Actor, s.ActionID, s.Version, s.ExpiresAt.UTC().Format(time.RFC3339))
}
