package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
)

// Record is one stored entry as bytes, with where it was read: a stream id
// or "file:line".
type Record struct {
	Pos  string
	Data []byte
}

// maxLine bounds one JSON Lines record, so a corrupt file cannot make a
// reader buffer without limit.
const maxLine = 16 << 20

// ReadRecords streams the non-empty lines of a JSON Lines journal (an
// export or the pending file); name positions errors.
func ReadRecords(r io.Reader, name string) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64<<10), maxLine)
		line := 0
		for sc.Scan() {
			line++
			data := bytes.TrimSpace(sc.Bytes())
			if len(data) == 0 {
				continue
			}
			if !yield(Record{Pos: name + ":" + strconv.Itoa(line), Data: data}, nil) {
				return
			}
		}
		if err := sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				err = fmt.Errorf("line longer than %d bytes", maxLine)
			}
			yield(Record{}, fmt.Errorf("%s:%d: %w", name, line+1, err))
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
				if err = json.Unmarshal(rec.Data, &e); err != nil {
					err = fmt.Errorf("journal record at %s: %w", rec.Pos, err)
				}
			}
			if !yield(e, err) || err != nil {
				return
			}
		}
	}
}
