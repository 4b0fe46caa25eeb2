package yamlfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// DecodeJSON decodes the one JSON document in data into v within lim: the
// bytes are checked (Check) before encoding/json sees them, and a syntax
// or type error is an *Error at its line:col. Unknown fields are ignored,
// as encoding/json does: the files and bodies read this way are written
// by programs, and a newer writer may add fields.
func DecodeJSON(file string, data []byte, v any, lim Limits) error {
	if err := Check(file, data, lim); err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return jsonErr(file, data, err)
	}
	return nil
}

// jsonErr positions an encoding/json error in data.
func jsonErr(file string, data []byte, err error) *Error {
	e := &Error{File: file, Msg: err.Error()}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	off := int64(-1)
	switch {
	case errors.As(err, &syn):
		off = syn.Offset - 1 // the offset is past the byte that did not fit
	case errors.As(err, &typ):
		off = valueStart(data, typ.Offset)
		e.Msg = friendly(err.Error())
	}
	if off >= 0 {
		e.Line, e.Col = position(data, int(min(off, int64(len(data)))))
	}
	return e
}

// valueStart is where the scalar value that ends at end starts: a type
// error's offset is past the value, and the person fixing the file looks
// for its start. A collection is left at its end.
func valueStart(data []byte, end int64) int64 {
	i := min(int(end), len(data)) - 1
	switch {
	case i < 0:
		return 0
	case data[i] == '"':
		for j := i - 1; j >= 0; j-- {
			if data[j] == '"' && !escaped(data, j) {
				return int64(j)
			}
		}
	case data[i] != '}' && data[i] != ']':
		j := i
		for j > 0 && !bytes.ContainsAny(data[j-1:j], " \t\r\n,:[{") {
			j--
		}
		return int64(j)
	}
	return int64(i)
}

// escaped reports whether data[i] follows an odd run of backslashes.
func escaped(data []byte, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && data[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// position is the 1-based line and column (in characters) of data[at].
func position(data []byte, at int) (line, col int) {
	before := data[:max(at, 0)]
	start := bytes.LastIndexByte(before, '\n') + 1
	return bytes.Count(before, []byte{'\n'}) + 1, utf8.RuneCount(before[start:]) + 1
}

// Prefix says what was being read in err: an *Error keeps its
// file:line:col first ("f:1:2: journal mark: ..."), any other error is
// wrapped ("journal mark: ...").
func Prefix(what string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		c := *e
		c.Msg = what + ": " + c.Msg
		return &c
	}
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
