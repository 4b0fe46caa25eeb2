package lab

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"

	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/lab/sim"
)

// WriteSummary writes a lab run's summary to out as the incident's
// timeline: what the retries did, when each signal fired, when the pool
// and then the edge gave way, and how far the fleet's breakers disagreed.
// Names come from a scenario file, so they are escaped.
func WriteSummary(out io.Writer, s sim.Summary) error {
	w := new(bytes.Buffer)
	opt := func(v *float64) string {
		if v == nil {
			return "never"
		}
		return strconv.FormatFloat(*v, 'f', 0, 64) + "s"
	}
	q := sanitize.Line
	fmt.Fprintf(w, "scenario %s, seed %d, %0.fs simulated, fault ends at %0.fs\n", q(s.Scenario), s.Seed, s.Simulated, s.FaultEnd)
	fmt.Fprintf(w, "peak amplification          %.2f (steady %.2f; %.2f two minutes after the fault)\n",
		s.PeakAmplification, s.SteadyAmplification, s.AmplificationAfterFault)
	fmt.Fprintf(w, "max attempts per request    %d (p99 %d)\n", s.MaxAttemptsPerRequest, s.AttemptsPerRequestP99)
	deps := sortedNames(s.PeakDependencyAttemptsPerS)
	for _, d := range deps {
		fmt.Fprintf(w, "peak attempts/s into %-14s %.0f (a minute's rate %.1f× calm)\n", q(d), s.PeakDependencyAttemptsPerS[d], s.PeakOutboundRatio[d])
	}
	fmt.Fprintf(w, "peak pool saturation        %.2f (first exhausted at %s)\n", s.PeakPoolSaturation, opt(s.FirstPoolExhausted))
	fmt.Fprintf(w, "peak demanded concurrency   %.2f of capacity\n", s.PeakDemandedConcurrency)
	for _, svc := range sortedNames(s.PeakDemandedThreads) {
		fmt.Fprintf(w, "peak demanded threads in %-10s %.0f\n", q(svc), s.PeakDemandedThreads[svc])
	}
	fmt.Fprintf(w, "min edge success rate       %.3f (%.3f two minutes after the fault)\n", s.MinEdgeSuccessRate, s.EdgeSuccessAfterFault)
	fmt.Fprintf(w, "edge 5xx above 5%% from      %s (worst %.0f%%)\n", opt(s.FirstEdge5xxOver5Pct), 100*s.MaxEdge5xxShare)
	for _, ep := range sortedNames(s.MinEndpointSuccess) {
		fmt.Fprintf(w, "min success of %-20s %.3f\n", q(ep), s.MinEndpointSuccess[ep])
	}
	// The first crit sample, before the alert's for: has held (below).
	fmt.Fprintf(w, "amplification past crit at  %s\n", opt(s.DetectAmplification))
	fmt.Fprintf(w, "edge errors past crit at    %s\n", opt(s.DetectEdgeErrorRate))
	fmt.Fprintf(w, "recovered at                %s\n", opt(s.Recovered))
	for _, d := range deps {
		fmt.Fprintf(w, "peak abandoned work/s in %-10s %.0f\n", q(d), s.PeakAbandonedWorkPerS[d])
	}
	for _, call := range sortedNames(s.BreakerOpenFraction) {
		b := s.BreakerOpenFraction[call]
		fmt.Fprintf(w, "breakers open on %-18s at most %.0f%% of pods, disagreeing for %.0fs\n", q(call), 100*b.Max, b.DisagreeS)
	}
	for _, svc := range sortedNames(s.Pods) {
		if h := s.Pods[svc]; len(h) > 1 {
			most := 0
			for _, p := range h {
				most = max(most, p.Pods)
			}
			fmt.Fprintf(w, "pods of %-19s %d → %d (%d changes)\n", q(svc), h[0].Pods, most, len(h)-1)
		}
	}
	fmt.Fprintf(w, "retry signal leads edge by  %s\n", opt(s.LeadS))
	for _, a := range s.Alerts {
		fmt.Fprintf(w, "alert %-21s fires at %-6s (warns at %s, calm %s)\n", q(a.Query), opt(a.FirstFiring), opt(a.FirstWarn), a.Calm)
	}
	_, err := out.Write(w.Bytes())
	return err
}

func sortedNames[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
