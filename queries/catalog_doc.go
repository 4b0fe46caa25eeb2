// Package queries is stormctl's saved-query catalogue: the signals of a retry
// storm (amplification, retry ratio, pool saturation, ...) as PromQL
// templates, one per query pack (stormctl's own metrics, Envoy, Istio,
// resilience4j, OpenTelemetry HTTP, gRPC, span metrics, HikariCP, Go
// database/sql), with thresholds, safe parameter templating and Prometheus
// rules export.
//
// # Catalogue files
//
// The built-in catalogue is embedded from catalog/*.yaml; users add files
// with --queries DIR or the config key queries-dirs. Every file has the same
// schema:
//
//	packs:
//	  - name: linkerd                 # new pack, or amend a built-in one
//	    title: Linkerd
//	    description: Linkerd proxy metrics.
//	    labels: {service: deployment, dependency: dst_deployment}  # param → label
//	    unsupported: why it cannot answer the queries it has no entry for
//	queries:
//	  - id: amplification             # a built-in id amends it; a new id adds a query
//	    title: ...                    # title, meaning, action (what to do), unit
//	    params: [service, dependency, window]
//	    window: 1m                    # default rate window
//	    threshold: {warn: 1.2, crit: 1.3, direction: above, for: 1m}
//	    packs:
//	      linkerd:
//	        expr: |                   # a text/template; see below
//	          sum {{ by "service" "dependency" }} (rate(request_total{{ sel "service" "dependency" }}[{{ window }}]))
//	        metrics: [name]           # only for selectors that match names by regex
//	        bound: lower              # or upper: the value is a bound, not exact
//	        note: caveat shown with every result
//	      istio:
//	        unsupported: why this pack cannot answer this query
//
// Templates see no values, only four functions, so a parameter can never be
// pasted into PromQL: sel renders a selector's matchers from params (exact
// match, escaped; unset params are left out) and static matchers given as
// extra arguments; by renders "by (labels)"; labels renders the label list
// alone (for on() and ignoring()); window renders the rate window. A param
// argument may name its label explicitly ("service:destination_workload").
// Anything else in a template — range, if, variables, pipes — is refused
// when the file loads, as is a template that renders invalid PromQL.
package queries
