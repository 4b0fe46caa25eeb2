package sanitize

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Mask is Line for a place of fixed width, such as a dashboard cell or the
// lab's one-line clock: every character Line would escape, and every
// invalid UTF-8 byte, becomes the one rune with, so the text keeps its
// width and can neither act on the terminal nor break the line.
func Mask(s string, with rune) string {
	if clean(s, keepNothing) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n <= 1) || hostile(r) {
			b.WriteRune(with)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// HTMLText is Block for a document already escaped as HTML (a report
// written by html/template): newlines and tabs stay, an ASCII control is
// written as \xNN and every other hostile rune as \uXXXX, and invalid UTF-8
// as U+FFFD, so no text from the journal can hide or reorder what the
// report shows.
func HTMLText(s string) string {
	if clean(s, keepLayout) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b.WriteRune(utf8.RuneError)
		case !hostile(r) || keepLayout(r):
			b.WriteString(s[i : i+n])
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += n
	}
	return b.String()
}

// Clip shortens s to at most n runes, the last of them "…" when it cut.
func Clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:max(n-1, 0)]) + "…"
}
