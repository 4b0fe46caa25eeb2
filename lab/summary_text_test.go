package lab

import (
	"errors"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/lab/sim"
)

func at(s float64) *float64 { return &s }

// blipSummary is a summary shaped like gateway-blip's: a payment-gateway
// fault from 120 s to 160 s, the retries amplifying it into checkout's pool.
func blipSummary() sim.Summary {
	return sim.Summary{
		Scenario: "gateway-blip", Seed: 7, Simulated: 360, FaultEnd: 160,
		PeakAmplification: 3.97, SteadyAmplification: 2.5, AmplificationAfterFault: 1.02,
		MaxAttemptsPerRequest: 27, AttemptsPerRequestP99: 9,
		PeakDependencyAttemptsPerS: map[string]float64{"payment-gateway": 412, "inventory": 80},
		PeakOutboundRatio:          map[string]float64{"payment-gateway": 3.94, "inventory": 1.2},
		PeakPoolSaturation:         1, FirstPoolExhausted: at(131), PeakDemandedConcurrency: 2.4,
		PeakDemandedThreads: map[string]float64{"checkout": 96},
		MinEdgeSuccessRate:  0.412, EdgeSuccessAfterFault: 0.998,
		FirstEdge5xxOver5Pct: at(135), MaxEdge5xxShare: 0.588,
		MinEndpointSuccess:  map[string]float64{"checkout/cart": 0.5},
		DetectAmplification: at(125), Recovered: at(290),
		PeakAbandonedWorkPerS: map[string]float64{"payment-gateway": 120, "inventory": 0},
		BreakerOpenFraction:   map[string]sim.BreakerFraction{"checkout->payment-gateway": {Max: 0.67, DisagreeS: 20}},
		Pods:                  map[string][]sim.PodCount{"checkout": {{T: 0, Pods: 3}, {T: 150, Pods: 5}, {T: 200, Pods: 6}}, "cart": {{T: 0, Pods: 2}}},
		LeadS:                 at(55),
		Alerts: []sim.Alert{
			{Query: "retry_ratio", FirstWarn: at(122), FirstFiring: at(180), Calm: "ok"},
			{Query: "edge_error_rate", Calm: "ok"},
		},
	}
}

func TestWriteSummary(t *testing.T) {
	var b strings.Builder
	if err := WriteSummary(&b, blipSummary()); err != nil {
		t.Fatal(err)
	}
	// Maps print in name order, a service whose pods never changed is left
	// out, and a time that never came reads "never".
	want := `scenario gateway-blip, seed 7, 360s simulated, fault ends at 160s
peak amplification          3.97 (steady 2.50; 1.02 two minutes after the fault)
max attempts per request    27 (p99 9)
peak attempts/s into inventory      80 (a minute's rate 1.2× calm)
peak attempts/s into payment-gateway 412 (a minute's rate 3.9× calm)
peak pool saturation        1.00 (first exhausted at 131s)
peak demanded concurrency   2.40 of capacity
peak demanded threads in checkout   96
min edge success rate       0.412 (0.998 two minutes after the fault)
edge 5xx above 5% from      135s (worst 59%)
min success of checkout/cart        0.500
amplification past crit at  125s
edge errors past crit at    never
recovered at                290s
peak abandoned work/s in inventory  0
peak abandoned work/s in payment-gateway 120
breakers open on checkout->payment-gateway at most 67% of pods, disagreeing for 20s
pods of checkout            3 → 6 (2 changes)
retry signal leads edge by  55s
alert retry_ratio           fires at 180s   (warns at 122s, calm ok)
alert edge_error_rate       fires at never  (warns at never, calm ok)
`
	if got := b.String(); got != want {
		t.Errorf("summary:\n%s\nwant:\n%s", got, want)
	}
}

// Names come from a scenario file: they reach the terminal escaped, and
// a line break in one cannot forge a line of the summary.
func TestWriteSummaryEscapesNames(t *testing.T) {
	evil := "pay\x1b]0;pwned\x07\nrecovered at                0s"
	s := sim.Summary{Scenario: "slow\x1b[2J", PeakDependencyAttemptsPerS: map[string]float64{evil: 1},
		Alerts: []sim.Alert{{Query: "retry\u202eratio", Calm: "ok"}}}
	var b strings.Builder
	if err := WriteSummary(&b, s); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.ContainsAny(out, "\x1b\x07\u202e") || strings.Count(out, "\nrecovered at") != 1 {
		t.Fatalf("a name acted on the terminal or forged a line:\n%q", out)
	}
	for _, want := range []string{"scenario slow\\u001b[2J, seed 0", `pay\u001b]0;pwned\u0007\u000arecovered at`, `alert retry\u202eratio`} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("stdout closed") }

// A summary that cannot be written is an error, not a silent success.
func TestWriteSummaryReportsWriteError(t *testing.T) {
	if err := WriteSummary(failingWriter{}, blipSummary()); err == nil || err.Error() != "stdout closed" {
		t.Errorf("err = %v, want stdout closed", err)
	}
}
