package policy

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Envoy's documented defaults (api/envoy/config/route/v3 and
// config/cluster/v3): a retry policy retries once; backoff is fully
// jittered exponential from 25 ms, capped at 10× the base; a route times
// out after 15 s, retries included; a cluster allows 3 retries in flight.
const (
	envoyNumRetries    = 1
	envoyBackoffBase   = 25 * time.Millisecond
	envoyRouteTimeout  = 15 * time.Second
	envoyMaxRetries    = 3
	envoyBudgetPercent = 20.0
)

// envoyCluster is what the analysis needs of a Cluster: its retry limits
// and whether it ejects hosts (outlier detection) per Envoy.
type envoyCluster struct {
	name    string
	budget  *Budget
	breaker *Breaker
	notes   []string
}

// candidate is one retry policy a file offers; a path takes one per file.
type candidate struct {
	name    string
	keys    []string // what selects it after FILE#
	target  string   // what it calls, matched to the path's dependency
	hop     *Hop
	cluster string // Envoy: the cluster whose limits apply
}

func isEnvoy(root *node) bool {
	if root.get("virtual_hosts") != nil || root.get("static_resources") != nil || isEnvoyCluster(root) {
		return true
	}
	if t := root.get("@type").str("@type"); strings.Contains(t, "envoy.") {
		return true
	}
	for _, r := range root.get("resources").items() {
		if strings.Contains(r.get("@type").str("@type"), "envoy.") {
			return true
		}
	}
	return false
}

// isEnvoyCluster reports a Cluster written on its own (a CDS resource or a
// bootstrap's cluster copied out): fields no other format has.
func isEnvoyCluster(n *node) bool {
	for _, k := range []string{"circuit_breakers", "outlier_detection", "load_assignment", "connect_timeout"} {
		if n.get(k) != nil {
			return true
		}
	}
	return false
}

// envoy reads RouteConfigurations and Clusters from a RouteConfiguration,
// a Cluster, a Bootstrap (static_resources) or an xDS resource list.
func envoy(d *doc) ([]candidate, map[string]*envoyCluster) {
	var cands []candidate
	clusters := map[string]*envoyCluster{}
	var visit func(n *node, depth int, cluster bool)
	visit = func(n *node, depth int, cluster bool) {
		if n == nil || depth > 6 {
			return
		}
		t := n.get("@type").str("@type")
		switch {
		case n.get("virtual_hosts") != nil || strings.HasSuffix(t, "RouteConfiguration"):
			cands = append(cands, envoyRoutes(n)...)
		case cluster || strings.HasSuffix(t, ".Cluster") || isEnvoyCluster(n):
			c := envoyClusterOf(n)
			clusters[c.name] = c
		}
		if sr := n.get("static_resources"); sr != nil {
			for _, l := range sr.get("listeners").items() {
				for _, fc := range l.get("filter_chains").items() {
					for _, f := range fc.get("filters").items() {
						if rc := f.path("typed_config", "route_config"); rc != nil {
							visit(rc, depth+1, false)
						}
					}
				}
			}
			for _, c := range sr.get("clusters").items() {
				visit(c, depth+1, true)
			}
		}
		for _, r := range n.get("resources").items() {
			visit(r, depth+1, false)
		}
	}
	for _, root := range d.docs {
		visit(root, 0, false)
	}
	return cands, clusters
}

func envoyRoutes(rc *node) []candidate {
	var out []candidate
	rcName := rc.get("name").str("name")
	for _, vh := range rc.get("virtual_hosts").items() {
		vhName := vh.get("name").str("name")
		vhRetry := vh.get("retry_policy")
		for i, r := range vh.get("routes").items() {
			act := r.get("route")
			if act == nil {
				continue // a redirect or direct response: no upstream
			}
			cluster := act.get("cluster").str("cluster")
			if cluster == "" {
				if wc := act.path("weighted_clusters", "clusters").items(); len(wc) > 0 {
					cluster = wc[0].get("name").str("name")
				}
			}
			rName := r.get("name").str("name")
			if rName == "" {
				rName = fmt.Sprintf("routes[%d]", i)
			}
			label := vhName + "/" + rName
			hop := &Hop{Service: "envoy:" + vhName + "->" + cluster, Format: FormatEnvoy, Source: r.where(), Retry: Retry{Attempts: 1}}
			hop.Deadline = Duration(envoyRouteTimeout)
			if t := act.get("timeout"); t != nil {
				hop.Deadline = protoDuration(t, "timeout")
			} else {
				hop.Notes = append(hop.Notes, "route timeout not set: Envoy's default 15s applies")
			}
			rp := act.get("retry_policy")
			if rp == nil && vhRetry != nil {
				rp = vhRetry
				hop.Notes = append(hop.Notes, "retry policy from the virtual host")
			}
			if rp != nil {
				hop.Source = rp.where()
				envoyRetry(rp, hop)
			}
			out = append(out, candidate{name: label, keys: []string{rName, vhName, cluster, label, rcName}, target: cluster, hop: hop, cluster: cluster})
		}
	}
	return out
}

func envoyRetry(rp *node, hop *Hop) {
	r := &hop.Retry
	retries := envoyNumRetries
	if n := rp.get("num_retries"); n != nil {
		retries, _ = n.integer("num_retries", 0, 1000)
	} else {
		hop.Notes = append(hop.Notes, "num_retries not set: Envoy's default 1 applies")
	}
	r.Attempts = retries + 1
	codes := rp.get("retriable_status_codes").strs("retriable_status_codes")
	for _, cond := range rp.get("retry_on").strs("retry_on") {
		switch cond {
		case "5xx", "gateway-error", "reset":
			// Envoy treats a per-try timeout as a local reset: these three
			// retry it, with resets and connection failures.
			r.On = r.On.With(Timeout, Reset, ConnectError)
			if cond != "reset" {
				r.On = r.On.With(ServerError)
			}
		case "connect-failure", "refused-stream", "reset-before-request", "http3-post-connect-failure":
			r.On = r.On.With(ConnectError)
		case "envoy-ratelimited":
			r.On = r.On.With(Throttled)
		case "retriable-status-codes":
			for _, c := range codes {
				switch v, _ := strconv.Atoi(c); {
				case v == 429:
					r.On = r.On.With(Throttled)
				case v >= 500 && v <= 599:
					r.On = r.On.With(ServerError)
				}
			}
		case "unavailable", "internal":
			r.On = r.On.With(ServerError)
		case "resource-exhausted":
			r.On = r.On.With(Throttled)
		case "deadline-exceeded":
			r.On = r.On.With(Timeout)
		case "cancelled", "retriable-4xx", "retriable-headers":
			hop.Notes = append(hop.Notes, "retry_on "+cond+" is not a failure class the analysis models")
		default:
			rp.d.bad(rp.get("retry_on"), "see Envoy's x-envoy-retry-on and x-envoy-retry-grpc-on conditions", "unknown retry_on condition %q", cond)
		}
	}
	if n := rp.get("per_try_timeout"); n != nil {
		hop.Timeout = protoDuration(n, "per_try_timeout")
	}
	b := Backoff{Kind: BackoffEnvoy, Base: Duration(envoyBackoffBase), Multiplier: 2, Jitter: JitterFull}
	if bo := rp.get("retry_back_off"); bo != nil {
		if n := bo.get("base_interval"); n != nil {
			b.Base = max(protoDuration(n, "base_interval"), Duration(time.Millisecond))
		} else {
			rp.d.bad(bo, "base_interval is required in retry_back_off", "retry_back_off has no base_interval")
		}
	}
	b.Max = 10 * b.Base
	if n := rp.path("retry_back_off", "max_interval"); n != nil {
		b.Max = protoDuration(n, "max_interval")
	}
	r.Backoff = b
	if rl := rp.get("rate_limited_retry_back_off"); rl != nil {
		for _, h := range rl.get("reset_headers").items() {
			if strings.EqualFold(h.get("name").str("name"), "Retry-After") {
				r.HonourRetryAfter = true
			}
		}
	}
}

func envoyClusterOf(n *node) *envoyCluster {
	c := &envoyCluster{name: n.get("name").str("name")}
	cb := n.get("circuit_breakers")
	var th *node
	for _, t := range cb.get("thresholds").items() {
		if p := t.get("priority").str("priority"); p == "" || p == "DEFAULT" {
			th = t
		}
	}
	switch {
	case th != nil && th.get("retry_budget") != nil:
		rb := th.get("retry_budget")
		pct := envoyBudgetPercent
		if v := rb.path("budget_percent", "value"); v != nil {
			pct, _ = v.number("budget_percent", 0, 100)
		}
		c.budget = &Budget{Kind: "ratio", Ratio: pct / 100, Scope: "process"}
	case th != nil && th.get("max_retries") != nil:
		m, _ := th.get("max_retries").integer("max_retries", 0, 1<<32-1)
		c.budget = concurrencyBudget(m)
	default:
		c.budget = concurrencyBudget(envoyMaxRetries)
		c.notes = append(c.notes, "cluster "+c.name+": Envoy's default circuit breaker max_retries 3 applies")
	}
	if cb != nil {
		c.breaker = &Breaker{Kind: "envoy circuit_breakers", Scope: "process", Source: cb.where()}
	}
	if od := n.get("outlier_detection"); od != nil {
		c.breaker = &Breaker{Kind: "envoy outlier_detection", Scope: "process", Source: od.where()}
	}
	return c
}

// concurrencyBudget is Envoy's max_retries in flight per cluster and per
// Envoy; Istio's default (2^32-1) is no budget at all.
func concurrencyBudget(m int) *Budget {
	if m >= 1_000_000 {
		return nil
	}
	return &Budget{Kind: "concurrency", Max: m, Scope: "process"}
}

var protoDurRE = regexp.MustCompile(`^-?[0-9]+(\.[0-9]{1,9})?s$`)

// protoDuration reads a protobuf JSON duration: seconds with an s suffix.
func protoDuration(n *node, what string) Duration {
	s, ok := n.scalar(what)
	if !ok {
		return 0
	}
	s = strings.TrimSpace(s)
	d, err := time.ParseDuration(s)
	if !protoDurRE.MatchString(s) || err != nil || d < 0 || d > 24*time.Hour {
		n.d.bad(n, "protobuf durations are seconds with an s suffix, e.g. 0.25s", "%s %q", what, s)
		return 0
	}
	return Duration(d)
}
