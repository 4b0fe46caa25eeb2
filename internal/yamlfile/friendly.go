package yamlfile

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
)

// goTypeError matches the YAML library's type mismatch messages, which are
// written for Go programmers ("cannot unmarshal []interface {} into Go
// struct field File.Contexts of type string").
var goTypeError = regexp.MustCompile(`cannot unmarshal (.+?) into Go (?:struct field \S+|value) of type (\S+)(.*)`)

// friendly rewrites a decoding message for the person who wrote the file:
// what was found and what was wanted, in YAML's words, never Go's.
func friendly(msg string) string {
	m := goTypeError.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	out := fmt.Sprintf("%s was used where %s is expected", found(m[1]), wanted(m[2]))
	if strings.Contains(m[3], "overflow") {
		out = fmt.Sprintf("%s is too large for %s", found(m[1]), wanted(m[2]))
	}
	return out
}

func found(s string) string {
	switch {
	case strings.HasPrefix(s, "[]"), s == "array": // "array", "object", "number": encoding/json's words
		return "sequence"
	case strings.HasPrefix(s, "map["), s == "object":
		return "mapping"
	case s == "string", s == "bool", s == "number":
		return s
	case strings.HasPrefix(s, "number "):
		return "number"
	}
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return "value " + s
}

func wanted(goType string) string {
	t := strings.TrimLeft(goType, "*")
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a sequence"
	case strings.HasPrefix(t, "map["):
		return "a mapping"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasSuffix(t, "Duration"):
		return "a duration such as 30s or 5m"
	}
	return "a mapping" // a struct
}

// Duration reads a duration scalar such as "30s" from n. Its errors are
// *Error with n's line and column (Decode fills in the file), so a bad
// value in a config file is reported where it is.
func Duration(n ast.Node) (time.Duration, error) {
	if _, null := n.(*ast.NullNode); null {
		return 0, nil
	}
	sc, ok := n.(ast.ScalarNode)
	if !ok {
		return 0, at(n, fmt.Sprintf("%s was used where a duration such as 30s or 5m is expected", n.Type().YAMLName()))
	}
	s := fmt.Sprint(sc.GetValue())
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, at(n, fmt.Sprintf("%q is not a duration: want a number and a unit, such as 30s, 5m or 1h30m", truncate(s, 40)))
	}
	return d, nil
}

func at(n ast.Node, msg string) *Error {
	e := &Error{Msg: msg}
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		e.Line, e.Col = tk.Position.Line, tk.Position.Column
	}
	return e
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
