package yamlfile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"iter"
)

// EnvMaxLines raises (or lowers) LineLimits.MaxLines for the JSON Lines
// files that read it from DefaultLineLimits.
const EnvMaxLines = "STORMCTL_MAX_INPUT_LINES"

// LineLimits bound a JSON Lines file: its size, one line's length and its
// number of lines; each line, one JSON document, is also held to Doc.
type LineLimits struct {
	MaxBytes int64
	MaxLine  int
	MaxLines int
	Doc      Limits
}

// Line is one non-empty line of a JSON Lines file, without its newline.
type Line struct {
	No   int // 1-based
	Data []byte
}

// Lines streams the non-empty lines of r (named name in errors) within
// lim. It stops at the first line past a limit with an *Error at that
// line's file:line:col, having held no more than one line at a time.
func Lines(r io.Reader, name string, lim LineLimits) iter.Seq2[Line, error] {
	return func(yield func(Line, error) bool) {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, min(64<<10, lim.MaxLine+1)), lim.MaxLine+1)
		var total int64
		n := 0
		for sc.Scan() {
			n++
			total += int64(len(sc.Bytes())) + 1
			switch {
			case total > lim.MaxBytes+1: // the last line may lack its newline
				yield(Line{}, limitErr(name, n, 1, EnvMaxBytes, "file is more than %s; the limit is %s", humanBytes(lim.MaxBytes), humanBytes(lim.MaxBytes)))
				return
			case len(sc.Bytes()) > lim.MaxLine:
				yield(Line{}, lineTooLong(name, n, lim))
				return
			case n > lim.MaxLines:
				yield(Line{}, limitErr(name, n, 1, EnvMaxLines, "more than %d lines; the limit is %d", lim.MaxLines, lim.MaxLines))
				return
			}
			data := bytes.TrimSpace(sc.Bytes())
			if len(data) == 0 {
				continue
			}
			if err := Check(name, data, lim.Doc); err != nil {
				var e *Error
				if errors.As(err, &e) && e.Line > 0 {
					e.Line = n // a line holds one document: its line 1 is line n
				}
				yield(Line{}, err)
				return
			}
			if !yield(Line{No: n, Data: data}, nil) {
				return
			}
		}
		if err := sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				err = lineTooLong(name, n+1, lim)
			} else {
				err = &Error{File: name, Line: n + 1, Col: 1, Msg: err.Error()}
			}
			yield(Line{}, err)
		}
	}
}

func lineTooLong(name string, n int, lim LineLimits) *Error {
	return &Error{File: name, Line: n, Col: lim.MaxLine + 1, Limit: true,
		Msg: "line longer than " + humanBytes(int64(lim.MaxLine)) + "; the limit is " + humanBytes(int64(lim.MaxLine))}
}

// DecodeLine decodes one line read by Lines (and so already checked) into
// v with encoding/json; an error is an *Error at the line's place in the
// file.
func DecodeLine(name string, l Line, v any) error {
	if err := json.Unmarshal(l.Data, v); err != nil {
		e := jsonErr(name, l.Data, err)
		e.Line = l.No // a line holds one document: its line 1 is line No
		e.Col = max(e.Col, 1)
		return e
	}
	return nil
}

// MaxLinesFromEnv is n, or the positive number in EnvMaxLines.
func MaxLinesFromEnv(n int) int { return envInt(EnvMaxLines, n) }
