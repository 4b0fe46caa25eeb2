package queries

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Direction says which side of a threshold is bad.
type Direction string

// Directions a threshold can face.
const (
	Above Direction = "above" // values greater than the threshold are bad
	Below Direction = "below" // values less than the threshold are bad
)

// Status is the verdict of a threshold on one value. "No data" is not a
// status: the caller decides it before a value exists.
type Status string

// Statuses, in increasing order of severity.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Crit Status = "crit"
)

// Threshold is when a query's value needs attention. Comparisons are strict:
// with Direction above and Crit 1.3, the value 1.3 is not critical, matching
// the "> 1.3" alarms of the runbooks. For is how long the value must stay
// past the threshold before an alert fires (see Rendered.Sustained).
type Threshold struct {
	Warn, Crit *float64
	Direction  Direction
	For        time.Duration
}

// NaNNoData is what a NaN value means wherever one is shown: Prometheus
// answered, but with no number (0/0 when a service had no traffic).
const NaNNoData = "no data: NaN from the server"

// Evaluate returns the status of v. ±Inf are numbers like any other: +Inf
// is the worst value when high is bad (past every limit: crit) and the
// best when low is bad, -Inf the other way round. NaN is no data, which is
// no evidence of a problem: OK here, shown as NaNNoData by callers.
func (t Threshold) Evaluate(v float64) Status {
	if math.IsNaN(v) {
		return OK
	}
	if t.breached(v, t.Crit) {
		return Crit
	}
	if t.breached(v, t.Warn) {
		return Warn
	}
	return OK
}

func (t Threshold) breached(v float64, limit *float64) bool {
	if limit == nil {
		return false
	}
	if t.Direction == Below {
		return v < *limit
	}
	return v > *limit
}

// op is the PromQL comparison operator that is true when a value is past the threshold.
func (t Threshold) op() string {
	if t.Direction == Below {
		return "<"
	}
	return ">"
}

// String is the threshold in words, e.g. "warn > 1.2, crit > 1.3 for 1m".
func (t Threshold) String() string {
	s := ""
	if t.Warn != nil {
		s = fmt.Sprintf("warn %s %s", t.op(), formatFloat(*t.Warn))
	}
	if t.Crit != nil {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("crit %s %s", t.op(), formatFloat(*t.Crit))
	}
	if t.For > 0 {
		s += " for " + promDuration(t.For)
	}
	return s
}

func (t Threshold) validate() error {
	if t.Direction != Above && t.Direction != Below {
		return fmt.Errorf("direction must be %q or %q, not %q", Above, Below, t.Direction)
	}
	if t.Warn == nil && t.Crit == nil {
		return fmt.Errorf("a threshold needs warn, crit or both")
	}
	for _, v := range []*float64{t.Warn, t.Crit} {
		if v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0)) {
			return fmt.Errorf("warn and crit must be finite numbers")
		}
	}
	if t.Warn != nil && t.Crit != nil {
		if t.Direction == Above && *t.Warn > *t.Crit {
			return fmt.Errorf("warn (%s) must not exceed crit (%s) when direction is above", formatFloat(*t.Warn), formatFloat(*t.Crit))
		}
		if t.Direction == Below && *t.Warn < *t.Crit {
			return fmt.Errorf("warn (%s) must not be below crit (%s) when direction is below", formatFloat(*t.Warn), formatFloat(*t.Crit))
		}
	}
	if t.For < 0 {
		return fmt.Errorf("for must not be negative")
	}
	return nil
}

// MarshalJSON writes the threshold for -o json with For as a Prometheus
// duration ("1m"), and leaves out an unset warn or crit.
func (t Threshold) MarshalJSON() ([]byte, error) {
	v := struct {
		Warn      *float64  `json:"warn,omitempty"`
		Crit      *float64  `json:"crit,omitempty"`
		Direction Direction `json:"direction"`
		For       string    `json:"for,omitempty"`
	}{Warn: t.Warn, Crit: t.Crit, Direction: t.Direction}
	if t.For > 0 {
		v.For = promDuration(t.For)
	}
	return json.Marshal(v)
}
