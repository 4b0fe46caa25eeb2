package signals

import (
	"math"

	"github.com/stormctl/stormctl/queries"
)

// severity orders the threshold states for comparing one sample with
// another; anything else (no data, NaN) breaches nothing.
var severity = map[State]int{StateWarn: 1, StateCrit: 2}

// heldFor reports whether a warn or crit state has lasted the threshold's
// for: — every sample of the last For is at least as bad — which is when a
// Prometheus alert on the same rule fires. A threshold without for: fires
// at once, so nothing is "held". The samples are the panel's own history
// (one every Step), so this costs no query.
func heldFor(t queries.Threshold, state State, pts []queries.Point) bool {
	want := severity[state]
	if t.For <= 0 || want == 0 || len(pts) == 0 {
		return false
	}
	from := pts[len(pts)-1].T.Add(-t.For)
	for i := len(pts) - 1; i >= 0; i-- {
		v := pts[i].V
		if math.IsNaN(v) || severity[State(t.Evaluate(v))] < want {
			return false
		}
		if !pts[i].T.After(from) {
			return true
		}
	}
	return false // the history is shorter than for:
}
