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
		off = typ.Offset - 1
		e.Msg = friendly(err.Error())
	}
	if off >= 0 {
		e.Line, e.Col = position(data, int(min(off, int64(len(data)))))
	}
	return e
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
