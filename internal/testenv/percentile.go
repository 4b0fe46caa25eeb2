package testenv

import "time"

// PercentileMs is the q-quantile (0..1) of sorted durations in
// milliseconds, for benchmarks reporting p50/p99.
func PercentileMs(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := min(int(q*float64(len(sorted))), len(sorted)-1)
	return float64(sorted[i].Microseconds()) / 1000
}
