package sanitize

import (
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

func TestActorNormalisesAndRefusesInvisibleCharacters(t *testing.T) {
	for in, want := range map[string]string{
		"alice":              "alice",
		"  alice ":           "alice",
		"Zoë Ruiz":           "Zoë Ruiz",
		"Zoe\u0308 Ruiz":     "Zoë Ruiz", // e + combining diaeresis → U+00EB
		"\u212b":             "\u00c5",   // ANGSTROM SIGN → Å
		"渡辺":                 "渡辺",
		"ops/oncall@example": "ops/oncall@example",
		"":                   "",
	} {
		got, err := Actor(in)
		if err != nil || got != want {
			t.Errorf("Actor(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"al\u200bice":    "format character U+200B (ZERO WIDTH SPACE) at column 3",
		"alice\u00a0":    "space character U+00A0 (NO-BREAK SPACE) at column 6",
		"\ufeffalice":    "format character U+FEFF (ZERO WIDTH NO-BREAK SPACE) at column 1",
		"bob\u202eecila": "control character U+202E (RIGHT-TO-LEFT OVERRIDE) at column 4",
		"mal\x1b[8mlory": "control character U+001B at column 4",
		"a\u2066b":       "control character U+2066 (LEFT-TO-RIGHT ISOLATE) at column 2",
		"al\u00adice":    "format character U+00AD (SOFT HYPHEN) at column 3",
		"ali\u3164ce":    "invisible character U+3164 (HANGUL FILLER) at column 4",
		"alice\ufe0f":    "invisible character U+FE0F at column 6",
		"a\u034fb":       "invisible character U+034F (COMBINING GRAPHEME JOINER) at column 2",
		"a\ue000":        "private-use character U+E000 at column 2",
		"\u0301alice":    "combining mark with nothing before it U+0301 at column 1",
		"a\u2028b":       "control character U+2028 at column 2",
		"a\u0378b":       "unassigned character U+0378 at column 2",
	} {
		_, err := Actor(in)
		var ae *ActorError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), want) {
			t.Errorf("Actor(%q) = %v; want %q", in, err, want)
		}
	}
	if _, err := Actor("al\xffice"); err == nil || !strings.Contains(err.Error(), "invalid UTF-8 at column 3") {
		t.Errorf("invalid UTF-8: %v", err)
	}
	if _, err := Actor(strings.Repeat("a", MaxActorLen+1)); err == nil {
		t.Error("a name past MaxActorLen was accepted")
	}
	// The refusal quotes the name so that the character shows.
	if _, err := Actor("al\u200bice"); !strings.Contains(err.Error(), `"al\u200bice"`) {
		t.Errorf("name not shown escaped: %v", err)
	}
}

// FuzzActor: whatever the input, Actor never panics, and a name it accepts
// is NFC, trimmed, within the length limit, already a fixed point, and
// made only of characters that print as themselves.
func FuzzActor(f *testing.F) {
	for _, s := range []string{"alice", "al\u200bice", "Zoe\u0308", " bob ", "\x1b[2J", "a\xffb", "\u0301", "\ufeff", "渡辺"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Actor(s)
		if err != nil {
			var ae *ActorError
			if !errors.As(err, &ae) {
				t.Fatalf("Actor(%q): untyped error %v", s, err)
			}
			if !utf8.ValidString(err.Error()) {
				t.Fatalf("Actor(%q): error is not valid UTF-8", s)
			}
			return
		}
		if !norm.NFC.IsNormalString(got) || len(got) > MaxActorLen || strings.Trim(got, " ") != got {
			t.Fatalf("Actor(%q) = %q: not NFC, trimmed and bounded", s, got)
		}
		if again, err := Actor(got); err != nil || again != got {
			t.Fatalf("Actor(Actor(%q)) = %q, %v; want %q", s, again, err, got)
		}
		for _, r := range got {
			if (r != ' ' && !unicode.IsPrint(r)) || hostile(r) {
				t.Fatalf("Actor(%q) = %q keeps %U", s, got, r)
			}
		}
	})
}
