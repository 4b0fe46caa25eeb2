package journal

import (
	"bufio"
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
)

// ParseFormat validates a --format value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case Markdown, CSV, JSONL:
		return f, nil
	}
	return "", fmt.Errorf("unknown export format %q (want md, csv or jsonl)", s)
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
// not grow with the journal. It returns how many entries it wrote.
func Export(w io.Writer, format Format, recs iter.Seq2[Record, error], f Filter) (int, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	var n int
	var err error
	switch format {
	case JSONL:
		n, err = exportJSONL(bw, recs, f)
	case CSV:
		n, err = exportCSV(bw, Entries(recs), f)
	case Markdown:
		n, err = exportMarkdown(bw, Entries(recs), f)
	default:
		_, err = ParseFormat(string(format))
	}
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return n, err
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

func exportCSV(w io.Writer, entries iter.Seq2[Entry, error], f Filter) (int, error) {
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
