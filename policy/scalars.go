package policy

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// scalar returns the text of a scalar; false (and an error) otherwise.
func (n *node) scalar(what string) (string, bool) {
	switch v := n.value().(type) {
	case *ast.NullNode, nil:
		return "", false
	case *ast.LiteralNode:
		return v.Value.Value, true
	case ast.ScalarNode:
		return fmt.Sprint(v.GetValue()), true
	}
	n.d.bad(n, "", "%s: want a single value, got a %s", what, kindName(n.value()))
	return "", false
}

func kindName(n ast.Node) string {
	switch n.(type) {
	case *ast.MappingNode:
		return "mapping"
	case *ast.SequenceNode:
		return "list"
	}
	return "value"
}

func (n *node) str(what string) string {
	s, _ := n.scalar(what)
	return clean(s)
}

// integer reads a whole number, also written as a string ("3"), as
// protobuf JSON and Spring Boot allow.
func (n *node) integer(what string, lo, hi int64) (int, bool) {
	s, ok := n.scalar(what)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || v < lo || v > hi {
		n.d.bad(n, "", "%s: want a whole number in [%d, %d], got %q", what, lo, hi, s)
		return 0, false
	}
	return int(v), true
}

func (n *node) number(what string, lo, hi float64) (float64, bool) {
	s, ok := n.scalar(what)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || v < lo || v > hi {
		n.d.bad(n, "", "%s: want a number in [%g, %g], got %q", what, lo, hi, s)
		return 0, false
	}
	return v, true
}

func (n *node) boolean(what string) (bool, bool) {
	s, ok := n.scalar(what)
	if !ok {
		return false, false
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "yes", "on":
		return true, true
	case "false", "no", "off":
		return false, true
	}
	n.d.bad(n, "", "%s: want true or false, got %q", what, s)
	return false, false
}

// strings reads a list of values, or one comma-separated value.
func (n *node) strs(what string) []string {
	if n.isSeq() {
		var out []string
		for _, it := range n.items() {
			if s, ok := it.scalar(what); ok {
				out = append(out, clean(strings.TrimSpace(s)))
			}
		}
		return out
	}
	s, ok := n.scalar(what)
	if !ok {
		return nil
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, clean(p))
		}
	}
	return out
}

// clean makes text from a file safe to print on a terminal, in Markdown or
// JSON: control characters are written as Go escapes.
func clean(s string) string {
	ok := true
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0xfffd || r == 0x2028 || r == 0x2029 || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	q := strconv.QuoteToASCII(s)
	return q[1 : len(q)-1]
}
