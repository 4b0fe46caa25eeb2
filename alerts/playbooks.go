package alerts

// DefaultPlaybooks names the built-in playbook for each saved query's
// alert: the incident shape (DOMAIN.md) whose early signal the query is.
// edge_error_rate names none: it is the outage itself, lagging the
// signals that name the shape.
var DefaultPlaybooks = map[string]string{
	"amplification":         "retry-amplification",
	"retry_ratio":           "retry-amplification",
	"retries_per_request":   "retry-amplification",
	"throttle_retries":      "retry-amplification",
	"pool_saturation":       "shared-pool-exhaustion",
	"demanded_concurrency":  "shared-pool-exhaustion",
	"dependency_p99":        "lockstep-retries",
	"breaker_open_fraction": "fleet-breaker-amnesia",
	"replica_churn":         "fleet-breaker-amnesia",
}

// PlaybookFor returns the playbook of saved query id: the configured
// mapping first ("" there means none), then DefaultPlaybooks.
func PlaybookFor(configured map[string]string) func(id string) string {
	return func(id string) string {
		if pb, ok := configured[id]; ok {
			return pb
		}
		return DefaultPlaybooks[id]
	}
}
