package playbooks

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Expectation is a comparison a query's value must meet, written as
// "> 1.3", "< 0.7", "== 0", ">= 2", "<= 0.1" or "!= 0".
type Expectation struct {
	Op    string  `json:"op"`
	Value float64 `json:"value"`
}

// expectOps are the comparison operators, longest first so that ">=" is
// not read as ">".
var expectOps = []string{">=", "<=", "==", "!=", ">", "<"}

// ParseExpectation parses "OP NUMBER".
func ParseExpectation(s string) (Expectation, error) {
	t := strings.TrimSpace(s)
	for _, op := range expectOps {
		rest, ok := strings.CutPrefix(t, op)
		if !ok {
			continue
		}
		rest = strings.TrimSpace(rest)
		v, err := strconv.ParseFloat(rest, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return Expectation{}, fmt.Errorf("%q is not a finite number", rest)
		}
		return Expectation{Op: op, Value: v}, nil
	}
	return Expectation{}, fmt.Errorf("%q does not start with a comparison (>, >=, <, <=, ==, !=)", s)
}

// Holds reports whether v meets the expectation. NaN (e.g. 0/0 with no
// traffic) meets none: it is no evidence either way.
func (e Expectation) Holds(v float64) bool {
	if math.IsNaN(v) {
		return false
	}
	switch e.Op {
	case ">":
		return v > e.Value
	case ">=":
		return v >= e.Value
	case "<":
		return v < e.Value
	case "<=":
		return v <= e.Value
	case "==":
		return v == e.Value
	case "!=":
		return v != e.Value
	}
	return false
}

// String is the expectation as written, normalised: "> 1.3".
func (e Expectation) String() string {
	if e.Op == "" {
		return ""
	}
	return e.Op + " " + strconv.FormatFloat(e.Value, 'g', -1, 64)
}

// overTime is the PromQL function that turns a window of values into the
// one to compare: to hold throughout the window, the value must stay above
// a lower bound (its minimum) or below an upper bound (its maximum); to
// hold at some moment, the opposite. Equality has no such function.
func (e Expectation) overTime(throughout bool) string {
	lower := e.Op == ">" || e.Op == ">="
	if !lower && e.Op != "<" && e.Op != "<=" {
		return ""
	}
	if lower == throughout {
		return "min_over_time"
	}
	return "max_over_time"
}
