package output

import (
	"bytes"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

func TestTableTTYAndPipe(t *testing.T) {
	var tty, pipe bytes.Buffer
	for _, c := range []struct {
		buf *bytes.Buffer
		tty bool
	}{{&tty, true}, {&pipe, false}} {
		p := NewTable(c.buf, c.tty, "id", "value")
		p.Row("amplification", "3.9")
		p.Row("retry_ratio", "0.74")
		if err := p.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if want := "ID             VALUE\namplification  3.9\nretry_ratio    0.74\n"; tty.String() != want {
		t.Errorf("tty table:\n%q\nwant\n%q", tty.String(), want)
	}
	if want := "amplification\t3.9\nretry_ratio\t0.74\n"; pipe.String() != want {
		t.Errorf("pipe rows:\n%q\nwant\n%q", pipe.String(), want)
	}
}

func TestStructuredSameShape(t *testing.T) {
	v := struct {
		ID    string  `json:"id"`
		Value float64 `json:"value"`
	}{"amplification", 3.5}
	var j, y bytes.Buffer
	if err := Structured(&j, JSON, v); err != nil {
		t.Fatal(err)
	}
	if err := Structured(&y, YAML, v); err != nil {
		t.Fatal(err)
	}
	if j.String() != "{\n  \"id\": \"amplification\",\n  \"value\": 3.5\n}\n" {
		t.Errorf("json: %q", j.String())
	}
	if y.String() != "id: amplification\nvalue: 3.5\n" {
		t.Errorf("yaml: %q", y.String())
	}
	var arrow bytes.Buffer
	if err := Structured(&arrow, JSON, map[string]string{"target": "checkout->payments"}); err != nil || !bytes.Contains(arrow.Bytes(), []byte("checkout->payments")) {
		t.Errorf("target escaped: %s %v", arrow.String(), err)
	}
	if _, err := ParseFormat("xml"); err == nil {
		t.Error("xml accepted")
	}
}

// Control characters in values (text from servers and users) are escaped
// in YAML as in JSON, and read back as the same strings; other strings are
// written as before.
func TestStructuredYAMLEscapesControlCharacters(t *testing.T) {
	v := map[string]any{
		"hostile": "check\x1b]0;pwned\aout\r\x00",
		"plain":   "payments",
		"lines":   "contexts:\n  prod:\n",
		"nested":  []any{map[string]string{"label": "a\x1b[2Jb"}},
	}
	var y bytes.Buffer
	if err := Structured(&y, YAML, v); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(y.String(), "\x1b\a\r\x00") {
		t.Fatalf("raw control characters in YAML: %q", y.String())
	}
	for _, want := range []string{"plain: payments\n", "lines: |\n  contexts:\n"} {
		if !strings.Contains(y.String(), want) {
			t.Errorf("YAML lacks %q:\n%s", want, y.String())
		}
	}
	var back map[string]any
	if err := yaml.Unmarshal(y.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back["hostile"] != v["hostile"] || back["lines"] != v["lines"] ||
		back["nested"].([]any)[0].(map[string]any)["label"] != "a\x1b[2Jb" {
		t.Errorf("YAML does not read back the same strings: %q", back)
	}
}

// TestYAMLKeepsHostileTextExact: a string with control characters is
// written double-quoted with escapes, so the YAML is valid, decodes to the
// exact text and carries no raw control byte; other strings are unchanged.
func TestYAMLKeepsHostileTextExact(t *testing.T) {
	hostile := "a\x1b]0;pwned\x07\u009b2J\u202eok\nnext"
	v := map[string]any{"reason": hostile, "target": "checkout->payments", "list": []string{hostile}}
	var buf bytes.Buffer
	if err := Structured(&buf, YAML, v); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, b := range []string{"\x1b", "\x07", "\u009b", "\u202e"} {
		if strings.Contains(out, b) {
			t.Fatalf("raw %q in YAML:\n%s", b, out)
		}
	}
	var back struct {
		Reason string   `yaml:"reason"`
		Target string   `yaml:"target"`
		List   []string `yaml:"list"`
	}
	if err := yaml.Unmarshal(buf.Bytes(), &back); err != nil || back.Reason != hostile || back.List[0] != hostile || back.Target != "checkout->payments" {
		t.Fatalf("decoded %+v %v from:\n%s", back, err, out)
	}
	if !strings.Contains(out, "target: checkout->payments\n") {
		t.Fatalf("a plain string changed style:\n%s", out)
	}
}

// TestTableCellsCannotForgeRows: a cell's newline, tab or escape is shown
// as text, so a pipe still sees one row of two columns.
func TestTableCellsCannotForgeRows(t *testing.T) {
	for _, tty := range []bool{false, true} {
		var buf bytes.Buffer
		p := NewTable(&buf, tty, "actor", "reason")
		p.Row("mallory", "ok\n2026-01-01\tforged\x1b[2J")
		if err := p.Flush(); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		last := lines[len(lines)-1]
		if len(lines) != map[bool]int{false: 1, true: 2}[tty] || strings.Contains(buf.String(), "\x1b") ||
			!strings.Contains(last, `ok\u000a2026-01-01\u0009forged\u001b[2J`) {
			t.Fatalf("tty %v: %q", tty, buf.String())
		}
	}
}
