package yamlfile

import (
	"errors"
	"strings"
	"testing"
)

type doc struct {
	Name  string `yaml:"name"`
	Steps []struct {
		ID    string `yaml:"id"`
		Query string `yaml:"query"`
	} `yaml:"steps"`
}

func TestDecodePositions(t *testing.T) {
	cases := []struct {
		name, src string
		line, col int
	}{
		{"unknown field", "name: a\nsteps:\n  - id: x\n    qurey: y\n", 4, 5},
		{"duplicate key", "name: a\nname: b\n", 2, 1},
		{"bad type", "name: a\nsteps: 3\n", 2, 8},
		{"syntax", "name: a\nsteps: [x, y\n", 2, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var d doc
			err := Decode("p.yaml", []byte(c.src), &d)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("want *Error, got %v", err)
			}
			if e.File != "p.yaml" || e.Line != c.line || (c.col != 0 && e.Col != c.col) {
				t.Fatalf("got %s:%d:%d (%s), want line %d col %d", e.File, e.Line, e.Col, e.Msg, c.line, c.col)
			}
		})
	}
}

func TestDocErrorf(t *testing.T) {
	src := "name: a\nsteps:\n  - id: x\n    query: nope\n"
	d, err := Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	e := d.Errorf("$.steps[0].query", "run `stormctl query list`", "unknown query id %q", "nope")
	if got, want := e.Error(), `p.yaml:4:12: unknown query id "nope" (run `+"`stormctl query list`"+`)`; got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

// FuzzDecode: arbitrary input never panics, and every error names the file.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{"name: a\n", "steps: [x, y\n", "services: ! {0}\n", "a: &x [*x]\n", "- - - -\n", "name: !!binary x\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		var d doc
		if err := Decode("f.yaml", []byte(src), &d); err != nil {
			var e *Error
			if !errors.As(err, &e) || e.File != "f.yaml" {
				t.Fatalf("error without a file position: %v", err)
			}
		}
		if _, err := Parse("f.yaml", []byte(src)); err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("parse error of type %T", err)
			}
		}
	})
}

func TestErrorsFlood(t *testing.T) {
	var es Errors
	for i := 1; i <= 1000; i++ {
		es = append(es, &Error{File: "f.yaml", Line: i, Col: 1, Msg: "unknown field"})
	}
	got := es.Error()
	lines := strings.Split(got, "\n")
	if len(lines) != MaxShown+1 || lines[MaxShown] != "... and 980 more problems" || lines[0] != "f.yaml:1:1: unknown field" {
		t.Fatalf("got %d lines, last %q", len(lines), lines[len(lines)-1])
	}
}
