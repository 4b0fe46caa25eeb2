// Package policy reads the retry policies along one call path and predicts
// the storm they allow, without a server. Load reads each layer, outermost
// first, from stormctl's own YAML or from what the layer already runs
// (Envoy, Istio, resilience4j, gRPC service config), reporting every
// problem as file:line:col. Analyze multiplies the attempts each layer may
// make when the dependency fails, adds the time they take and the pool
// they hold, and lists the findings (retries multiplied across layers,
// deadlines shorter than the retries behind them, no backoff, jitter or
// budget, a shared pool, ...), each with a severity and its fix; the ids
// and the JSON shape are stable (docs/policy.md). The rehearse subpackage
// runs a path in the storm lab and sets what it measured beside the
// prediction.
package policy
