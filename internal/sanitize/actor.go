package sanitize

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// MaxActorLen bounds an actor name in bytes: it is part of Redis keys and
// ACL patterns, and printed in every table.
const MaxActorLen = 128

// ActorError names the first character that makes an actor name unusable:
// one that does not print as itself, so that two names a responder cannot
// tell apart on screen would be different people to Redis.
type ActorError struct {
	Name   string // the name as given; Error quotes it with Go escapes
	Rune   rune
	Column int    // 1-based, in characters, after NFC normalisation
	What   string // "control character", "invisible character"…
	Byte   bool   // invalid UTF-8
	Long   bool   // longer than MaxActorLen
}

func (e *ActorError) Error() string {
	switch {
	case e.Byte:
		return fmt.Sprintf("actor %q: invalid UTF-8 at column %d", e.Name, e.Column)
	case e.Long:
		return fmt.Sprintf("actor %q: longer than %d bytes", e.Name, MaxActorLen)
	}
	label := fmt.Sprintf("U+%04X", e.Rune)
	if n := runeNames[e.Rune]; n != "" {
		label += " (" + n + ")"
	}
	return fmt.Sprintf("actor %q: %s %s at column %d is not allowed: an actor name must print as itself; type it without that character",
		e.Name, e.What, label, e.Column)
}

// runeNames are the characters most often pasted into names by accident
// or on purpose, named in the refusal.
var runeNames = map[rune]string{
	0x00a0: "NO-BREAK SPACE", 0x00ad: "SOFT HYPHEN", 0x034f: "COMBINING GRAPHEME JOINER",
	0x061c: "ARABIC LETTER MARK", 0x115f: "HANGUL CHOSEONG FILLER", 0x1160: "HANGUL JUNGSEONG FILLER",
	0x180e: "MONGOLIAN VOWEL SEPARATOR", 0x2007: "FIGURE SPACE", 0x200b: "ZERO WIDTH SPACE",
	0x200c: "ZERO WIDTH NON-JOINER", 0x200d: "ZERO WIDTH JOINER", 0x200e: "LEFT-TO-RIGHT MARK",
	0x200f: "RIGHT-TO-LEFT MARK", 0x202a: "LEFT-TO-RIGHT EMBEDDING", 0x202b: "RIGHT-TO-LEFT EMBEDDING",
	0x202c: "POP DIRECTIONAL FORMATTING", 0x202d: "LEFT-TO-RIGHT OVERRIDE", 0x202e: "RIGHT-TO-LEFT OVERRIDE",
	0x202f: "NARROW NO-BREAK SPACE", 0x2060: "WORD JOINER", 0x2066: "LEFT-TO-RIGHT ISOLATE",
	0x2067: "RIGHT-TO-LEFT ISOLATE", 0x2068: "FIRST STRONG ISOLATE", 0x2069: "POP DIRECTIONAL ISOLATE",
	0x2800: "BRAILLE PATTERN BLANK", 0x3000: "IDEOGRAPHIC SPACE", 0x3164: "HANGUL FILLER",
	0xfeff: "ZERO WIDTH NO-BREAK SPACE", 0xffa0: "HALFWIDTH HANGUL FILLER", 0xfffd: "REPLACEMENT CHARACTER",
}

// Actor is the one rule for actor names, wherever they come from (--actor,
// STORMCTL_ACTOR, a context, $USER, a library caller): surrounding spaces
// are trimmed, the name is put in Unicode NFC (so "é" typed as e + U+0301
// and as U+00E9 is one person), and a name holding a character that does
// not print as itself is an *ActorError naming it: controls, format and
// bidi characters (U+200B, U+FEFF, U+202E…), spaces other than U+0020
// (U+00A0…), default-ignorable and variation selectors, private-use,
// unassigned and blank-looking fillers, a combining mark with nothing to
// combine with. "" stays "" (no actor given).
func Actor(s string) (string, error) {
	if !utf8.ValidString(s) {
		col := utf8.RuneCountInString(s[:invalidAt(s)]) + 1
		return "", &ActorError{Name: s, Byte: true, Column: col}
	}
	s = norm.NFC.String(strings.Trim(s, " "))
	if len(s) > MaxActorLen {
		return "", &ActorError{Name: strings.ToValidUTF8(s[:MaxActorLen], "") + "…", Long: true}
	}
	col := 0
	for _, r := range s {
		col++
		if what := actorRefuses(r, col == 1); what != "" {
			return "", &ActorError{Name: s, Rune: r, Column: col, What: what}
		}
	}
	return s, nil
}

// actorRefuses says why r cannot be in an actor name ("" if it can).
func actorRefuses(r rune, first bool) string {
	switch {
	case r >= 0x20 && r < 0x7f:
		return ""
	case unicode.IsControl(r), hostile(r):
		return "control character"
	case unicode.Is(unicode.Cf, r):
		return "format character"
	case unicode.IsSpace(r), unicode.In(r, unicode.Zs, unicode.Zl, unicode.Zp):
		return "space character"
	case unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector),
		r == 0x2800, r == 0xfffd:
		return "invisible character"
	case unicode.In(r, unicode.Co, unicode.Cs):
		return "private-use character"
	case !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S):
		return "unassigned character"
	case first && unicode.In(r, unicode.Mn, unicode.Me, unicode.Mc):
		return "combining mark with nothing before it"
	}
	return ""
}

// invalidAt is the byte offset of the first invalid UTF-8 sequence in s.
func invalidAt(s string) int {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(s)
}
