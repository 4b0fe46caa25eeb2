package sanitize

import "strings"

// Frame is Block for a frame that a renderer has already styled: SGR
// sequences (ESC [ digits and separators m), the colours and weights that
// lipgloss writes, stay; every other escape — cursor moves, clear screen,
// OSC titles and clipboard writes — and every other control character is
// shown as text. Text from the control plane is made a Line before it is
// styled; Frame is the last guard for whatever reached the frame anyway.
func Frame(s string) string {
	if frameClean(s) {
		return s // the usual frame: styles only, nothing to copy
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for {
		i := strings.IndexByte(s, 0x1b)
		if i < 0 {
			escape(&b, s, keepLayout)
			return b.String()
		}
		escape(&b, s[:i], keepLayout)
		if n := sgrLen(s[i:]); n > 0 {
			b.WriteString(s[i : i+n])
			s = s[i+n:]
			continue
		}
		b.WriteString(`\u001b`)
		s = s[i+1:]
	}
}

// frameClean reports whether s holds no escape but SGR and no other
// control character but newline and tab.
func frameClean(s string) bool {
	for {
		i := strings.IndexByte(s, 0x1b)
		if i < 0 {
			return clean(s, keepLayout)
		}
		n := sgrLen(s[i:])
		if n == 0 || !clean(s[:i], keepLayout) {
			return false
		}
		s = s[i+n:]
	}
}

// sgrLen is the length of the SGR sequence s starts with, or 0.
func sgrLen(s string) int {
	if len(s) < 3 || s[1] != '[' {
		return 0
	}
	for i := 2; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9', c == ';', c == ':':
		case c == 'm':
			return i + 1
		default:
			return 0
		}
	}
	return 0
}
