package lab

import "slices"

// RetrySignals are the saved queries that see retries, the early signal
// of a storm: the summary's lead_s and the autopilot loop's first signal
// count from the first of them.
func RetrySignals() []string { return slices.Clone(retrySignals) }
