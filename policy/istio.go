package policy

import (
	"fmt"
	"strings"
	"time"
)

// Istio's defaults (pilot's retry.ConvertPolicy): a route without retries:
// gets 2 retries on connect-failure, refused-stream, unavailable, cancelled
// and retriable-status-codes (503); a retries: block overrides fields of
// that policy, but attempts: 0, or no attempts, disables it; there is no
// route timeout unless one is set; and clusters allow 2^32-1 retries in
// flight, which is no budget.
const (
	istioAttempts = 2
	istioRetryOn  = "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes"
)

func isIstio(root *node) bool {
	return strings.HasPrefix(root.get("apiVersion").str("apiVersion"), "networking.istio.io/")
}

// istio reads VirtualServices (v1, v1beta1, v1alpha3) and the
// DestinationRules beside them, from a multi-document file or a List.
func istio(d *doc) []candidate {
	var objs []*node
	for _, root := range d.docs {
		if items := root.get("items"); items != nil && root.get("kind").str("kind") == "List" {
			objs = append(objs, items.items()...)
		} else {
			objs = append(objs, root)
		}
	}
	rules := map[string]*node{} // host → DestinationRule spec
	for _, o := range objs {
		if o.get("kind").str("kind") == "DestinationRule" && isIstio(o) {
			spec := o.get("spec")
			rules[spec.get("host").str("host")] = spec
		}
	}
	var out []candidate
	for _, o := range objs {
		if o.get("kind").str("kind") != "VirtualService" || !isIstio(o) {
			continue
		}
		vsName := o.path("metadata", "name").str("metadata.name")
		spec := o.get("spec")
		for i, hr := range spec.get("http").items() {
			rName := hr.get("name").str("name")
			if rName == "" {
				rName = fmt.Sprintf("http[%d]", i)
			}
			host := ""
			if dests := hr.get("route").items(); len(dests) > 0 {
				host = dests[0].path("destination", "host").str("destination.host")
			}
			hop := &Hop{Service: "istio:" + vsName + "/" + rName, Format: FormatIstio, Source: hr.where()}
			if t := hr.get("timeout"); t != nil {
				hop.Deadline = goDuration(t, "timeout")
			}
			istioRetry(hr, hop)
			if dr := rules[host]; dr != nil {
				istioRule(dr, hop)
			} else {
				hop.Notes = append(hop.Notes, "no DestinationRule for "+host+": Istio allows 2^32-1 retries in flight (no budget)")
			}
			keys := []string{rName, vsName, host, vsName + "/" + rName}
			keys = append(keys, spec.get("hosts").strs("hosts")...)
			out = append(out, candidate{name: vsName + "/" + rName, keys: keys, target: host, hop: hop})
		}
	}
	return out
}

func istioRetry(hr *node, hop *Hop) {
	r := &hop.Retry
	rt := hr.get("retries")
	retries, retryOn, defaultOn := istioAttempts, istioRetryOn, true
	if rt == nil {
		hop.Notes = append(hop.Notes, "no retries: set: Istio's default of 2 retries on "+istioRetryOn+" (503) applies")
	} else {
		hop.Source = rt.where()
		// A retries: block is the default policy with its fields
		// overridden, except that attempts 0 (or none) disables it.
		retries = 0
		if n := rt.get("attempts"); n != nil {
			retries, _ = n.integer("attempts", 0, 1000)
		}
		if retries == 0 {
			hop.Notes = append(hop.Notes, "retries: without attempts (or attempts: 0) disables Istio's retries")
		}
		if n := rt.get("retryOn"); n != nil && n.str("retryOn") != "" {
			retryOn, defaultOn = n.str("retryOn"), false
		}
		if n := rt.get("perTryTimeout"); n != nil {
			hop.Timeout = goDuration(n, "perTryTimeout")
		}
	}
	r.Attempts = retries + 1
	if defaultOn {
		// The default policy's retriable status code: 503.
		r.On = r.On.With(ServerError)
	}
	for _, cond := range strings.Split(retryOn, ",") {
		switch cond = strings.TrimSpace(cond); cond {
		case "":
		case "5xx", "gateway-error", "reset":
			// As Envoy: a per-try timeout is a local reset.
			r.On = r.On.With(Timeout, Reset, ConnectError)
			if cond != "reset" {
				r.On = r.On.With(ServerError)
			}
		case "connect-failure", "refused-stream", "reset-before-request":
			r.On = r.On.With(ConnectError)
		case "unavailable", "internal":
			r.On = r.On.With(ServerError)
		case "resource-exhausted", "envoy-ratelimited", "429":
			r.On = r.On.With(Throttled)
		case "deadline-exceeded":
			r.On = r.On.With(Timeout)
		case "cancelled", "retriable-status-codes", "retriable-4xx", "retriable-headers":
		default:
			if len(cond) == 3 && cond[0] == '5' {
				r.On = r.On.With(ServerError)
				continue
			}
			hop.Notes = append(hop.Notes, "retryOn "+cond+" is not a failure class the analysis models")
		}
	}
	b := Backoff{Kind: BackoffEnvoy, Base: Duration(envoyBackoffBase), Multiplier: 2, Jitter: JitterFull}
	if n := rt.get("backoff"); n != nil {
		b.Base = max(goDuration(n, "backoff"), Duration(time.Millisecond))
	}
	b.Max = 10 * b.Base
	r.Backoff = b
}

// istioRule takes the retry limit and outlier detection of the
// destination's DestinationRule.
func istioRule(dr *node, hop *Hop) {
	tp := dr.get("trafficPolicy")
	hop.Retry.Budget = concurrencyBudget(1<<32 - 1)
	if n := tp.path("connectionPool", "http", "maxRetries"); n != nil {
		m, _ := n.integer("maxRetries", 0, 1<<32-1)
		hop.Retry.Budget = concurrencyBudget(m)
	}
	if od := tp.get("outlierDetection"); od != nil {
		hop.Breaker = &Breaker{Kind: "istio outlierDetection", Scope: "process", Source: od.where()}
	}
}
