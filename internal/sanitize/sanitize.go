// Package sanitize keeps text that stormctl did not write — reasons,
// actors, incident titles, targets, playbook text, anything read back from
// Redis, Prometheus or a config file — from acting on the terminal or the
// document it is printed into. On the way in, Input folds line breaks and
// refuses other control characters; on the way out, Line, Block, CSVCell
// and Writer turn every control character (C0, DEL, C1) and every bidi
// override into visible text such as \u001b.
//
// The escape is JSON's own \uXXXX form, so JSON that passes through Writer
// stays valid and decodes to exactly the original text.
package sanitize

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// hostile reports whether r must not reach a terminal as itself: C0
// controls, DEL, C1 controls (U+0080–U+009F, 8-bit CSI and OSC included),
// the bidi embeddings, overrides, isolates and marks, and the Unicode line
// and paragraph separators.
func hostile(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

// clean reports whether s needs no escaping under keep.
func clean(s string, keep func(rune) bool) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b >= 0x20 && b < 0x7f {
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n <= 1) || (hostile(r) && !keep(r)) {
			return false
		}
		i += n - 1
	}
	return true
}

// escape writes s to b with every hostile rune not kept as \uXXXX and
// every invalid UTF-8 byte as U+FFFD.
func escape(b *strings.Builder, s string, keep func(rune) bool) {
	start := 0 // the run of text to copy as it is
	for i := 0; i < len(s); {
		if c := s[i]; c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		bad := r == utf8.RuneError && n <= 1
		if !bad && (!hostile(r) || keep(r)) {
			i += n
			continue
		}
		b.WriteString(s[start:i])
		if bad {
			b.WriteRune(utf8.RuneError)
		} else {
			fmt.Fprintf(b, `\u%04x`, r)
		}
		i += n
		start = i
	}
	b.WriteString(s[start:])
}

func keepNothing(rune) bool { return false }

func keepLayout(r rune) bool { return r == '\n' || r == '\t' }

func apply(s string, keep func(rune) bool) string {
	if clean(s, keep) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	escape(&b, s, keep)
	return b.String()
}

// Line makes s safe as one line of terminal text, such as a table cell:
// every control character, newlines and tabs included, is escaped, so a
// value can neither act on the terminal nor forge a row or a column.
func Line(s string) string { return apply(s, keepNothing) }

// Block is Line for multi-line text (a playbook step's text, a Markdown
// document): newlines and tabs stay, everything else is escaped.
func Block(s string) string { return apply(s, keepLayout) }

// formulaLead are the first characters with which a spreadsheet reads a
// cell as a formula (OWASP's CSV injection list; tab and CR are escaped
// before the check).
const formulaLead = "=+-@"

func keepNewline(r rune) bool { return r == '\n' }

// CSVCell makes s a safe CSV cell: newlines stay (CSV quotes them), every
// other control character is escaped, and a cell that a spreadsheet would
// run as a formula is prefixed with a quote.
func CSVCell(s string) string {
	s = apply(s, keepNewline)
	if s != "" && strings.IndexByte(formulaLead, s[0]) >= 0 {
		return "'" + s
	}
	return s
}

// InputError names the first character that Input refused.
type InputError struct {
	Field  string
	Rune   rune
	Column int // 1-based, in characters
	Byte   bool
}

func (e *InputError) Error() string {
	if e.Byte {
		return fmt.Sprintf("%s: invalid UTF-8 at column %d", e.Field, e.Column)
	}
	return fmt.Sprintf("%s: control character U+%04X at column %d is not allowed: the text is printed on every responder's terminal", e.Field, e.Rune, e.Column)
}

// Input checks free text typed by a person (a reason, an actor, an
// incident title) before it is acted on and journaled: line breaks and tabs
// fold to single spaces, surrounding space is trimmed, and any other
// control character or bidi override, or invalid UTF-8, is an *InputError.
func Input(field, s string) (string, error) {
	if clean(s, keepNothing) {
		return strings.TrimSpace(s), nil
	}
	var b strings.Builder
	col := 0
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		col++
		switch {
		case r == utf8.RuneError && n <= 1:
			return "", &InputError{Field: field, Column: col, Byte: true}
		case r == '\r' && strings.HasPrefix(s[i+1:], "\n"):
			n++ // CRLF folds to one space
			b.WriteByte(' ')
		case r == '\n', r == '\r', r == '\t', r == 0x2028, r == 0x2029:
			b.WriteByte(' ')
		case hostile(r):
			return "", &InputError{Field: field, Rune: r, Column: col}
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return strings.TrimSpace(b.String()), nil
}
