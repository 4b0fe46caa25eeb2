package lever

import (
	"strconv"
	"unicode/utf8"
)

// MaxEcho is how many bytes of a rejected argument an error message quotes.
const MaxEcho = 64

// Quote quotes s for an error message, as %q does, cut to MaxEcho bytes
// with "…" after the quote, so that a 10 KB argument is echoed once and
// short, and control characters never reach a terminal raw.
func Quote(s string) string {
	if len(s) <= MaxEcho {
		return strconv.Quote(s)
	}
	cut := MaxEcho
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
}
