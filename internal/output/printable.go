package output

import (
	"strings"
	"unicode"
)

// Printable replaces control characters (escape sequences, newlines) with
// U+FFFD: label values come from Prometheus and names from config files,
// and neither may move the cursor or recolour the terminal.
func Printable(s string) string {
	if strings.IndexFunc(s, unicode.IsControl) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '\uFFFD'
		}
		return r
	}, s)
}
