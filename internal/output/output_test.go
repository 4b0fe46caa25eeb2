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
