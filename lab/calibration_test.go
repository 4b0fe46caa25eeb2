package lab

import (
	"context"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/lab/sim"
)

// calmExceptions are saved queries whose built-in threshold a scenario's
// normal state passes by design, and why.
var calmExceptions = map[string]string{
	// The built-in dependency_p99 thresholds assume a 1 s timeout; the
	// model provider's normal p99 is 1.1 s (read as ~1.75 s from the
	// client_golang default buckets 1 and 2.5) under a 2.5 s worker timeout.
	"model-provider/dependency_p99": "normal p99 above the 1 s default threshold",
}

// No saved query alarms before a fault starts, in any scenario: a lab that
// raises alarms at rest teaches responders to ignore them.
func TestNoFalseAlarmsInCalm(t *testing.T) {
	all, err := sim.Builtins()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range all {
		t.Run(sc.Name, func(t *testing.T) {
			l := newLab(t, sc.Name, sc.FirstFault())
			if err := l.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			sum, err := l.Summary(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(sum.Alerts) < 8 {
				t.Fatalf("only %d saved queries judged: %+v", len(sum.Alerts), sum.Alerts)
			}
			for _, a := range sum.Alerts {
				base := strings.TrimSuffix(sc.Name, "-protected")
				if _, ok := calmExceptions[base+"/"+a.Query]; ok {
					continue
				}
				if a.Calm != "ok" || a.FirstFiring != nil {
					t.Errorf("%s in calm: %s (worst %v, firing at %v, %s)", a.Query, a.Calm, deref(a.CalmWorst), deref(a.FirstFiring), a.Series)
				}
			}
		})
	}
}

func deref(v *float64) any {
	if v == nil {
		return nil
	}
	return *v
}
