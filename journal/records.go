package journal

import (
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"strconv"

	"github.com/stormctl/stormctl/internal/yamlfile"
)

// Record is one stored entry as bytes, with where it was read: a stream id
// or "file:line".
type Record struct {
	Pos  string
	Data []byte
	// file and line are set for a record read from a file, so that a
	// record that does not decode is named file:line:col.
	file string
	line int
}

// maxLine bounds one JSON Lines record, so a corrupt file cannot make a
// reader buffer without limit.
const maxLine = 16 << 20

// exportLimits bound a saved journal (an export given with --file): as
// large as ReadCheckpoint accepts, each line one entry.
func exportLimits() yamlfile.LineLimits {
	d := yamlfile.DefaultLimits()
	return yamlfile.LineLimits{MaxBytes: 16 * d.MaxBytes, MaxLine: maxLine, MaxLines: yamlfile.MaxLinesFromEnv(1_000_000), Doc: d}
}

// localLimits bound the files this machine keeps (the pending file, the
// written record), which their readers hold whole: a few thousand entries
// written while Redis was unreachable, far below these.
func localLimits() yamlfile.LineLimits {
	d := yamlfile.DefaultLimits()
	return yamlfile.LineLimits{MaxBytes: 8 * d.MaxBytes, MaxLine: 1 << 20, MaxLines: yamlfile.MaxLinesFromEnv(100_000), Doc: d}
}

// ReadRecords streams the non-empty lines of a saved JSON Lines journal
// (an export); name positions errors.
func ReadRecords(r io.Reader, name string) iter.Seq2[Record, error] {
	return readRecords(r, name, exportLimits())
}

// ReadLocalRecords streams the records of a file this machine wrote (the
// pending file, the written record), within the tighter limits of a file
// whose reader holds it whole.
func ReadLocalRecords(r io.Reader, name string) iter.Seq2[Record, error] {
	return readRecords(r, name, localLimits())
}

func readRecords(r io.Reader, name string, lim yamlfile.LineLimits) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		for l, err := range yamlfile.Lines(r, name, lim) {
			if err != nil {
				yield(Record{}, err)
				return
			}
			if !yield(Record{Pos: name + ":" + strconv.Itoa(l.No), Data: l.Data, file: name, line: l.No}, nil) {
				return
			}
		}
	}
}

// Entries decodes records into entries without checking hashes (Verify
// does); a record that does not decode is an error naming its position.
func Entries(recs iter.Seq2[Record, error]) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		for rec, err := range recs {
			var e Entry
			if err == nil {
				err = decodeRecord(rec, &e)
			}
			if !yield(e, err) || err != nil {
				return
			}
		}
	}
}

func decodeRecord(rec Record, e *Entry) error {
	if rec.line == 0 {
		if err := json.Unmarshal(rec.Data, e); err != nil {
			return fmt.Errorf("journal record at %s: %w", rec.Pos, err)
		}
		return nil
	}
	if err := yamlfile.DecodeLine(rec.file, yamlfile.Line{No: rec.line, Data: rec.Data}, e); err != nil {
		return yamlfile.Prefix("journal record", err)
	}
	return nil
}
