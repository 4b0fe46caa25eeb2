package policy

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// callPath reads stormctl's own CallPath format (docs/policy.md) strictly:
// unknown fields are errors, like every stormctl file.
func callPath(d *doc, p *Path) {
	root := d.docs[0]
	root.known("a CallPath", "apiVersion", "kind", "name", "rate", "deadline", "hops", "dependency")
	if v := root.get("apiVersion"); v.str("apiVersion") != "stormctl/v1" {
		d.bad(v, "write apiVersion: stormctl/v1", "apiVersion must be stormctl/v1")
	}
	if n := root.get("name"); n != nil {
		p.Name = n.str("name")
	}
	if n := root.get("rate"); n != nil {
		if r, ok := parseRate(n.str("rate")); ok {
			p.Rate = r
		} else {
			d.bad(n, "write requests per second, e.g. 400/s or 24000/m", "rate %q", n.str("rate"))
		}
	}
	if n := root.get("deadline"); n != nil {
		p.Deadline = goDuration(n, "deadline")
	}
	hops := root.get("hops")
	if hops != nil && !hops.isSeq() && !hops.isNull() {
		d.bad(hops, "", "hops must be a list, outermost first")
	}
	for _, h := range hops.items() {
		if hop := callPathHop(h); hop != nil {
			p.Hops = append(p.Hops, hop)
		}
	}
	if dep := root.get("dependency"); dep != nil {
		dep.known("dependency", "name", "p99", "success", "retry_after")
		p.Dependency.Name = dep.get("name").str("dependency.name")
		if n := dep.get("p99"); n != nil {
			p.Dependency.P99 = goDuration(n, "p99")
		}
		if n := dep.get("success"); n != nil {
			if v, ok := n.number("success", 0, 1); ok {
				p.Dependency.Success = &v
			}
		}
		if n := dep.get("retry_after"); n != nil {
			p.Dependency.RetryAfter = goDuration(n, "retry_after")
		}
	}
}

func callPathHop(h *node) *Hop {
	if !h.isMap() {
		h.d.bad(h, "each hop is a mapping with at least service:", "hop must be a mapping")
		return nil
	}
	h.known("a hop", "service", "pool", "timeout", "deadline", "ignore_deadline", "propagate_deadline", "retry", "breaker")
	hop := &Hop{Format: FormatCallPath, Source: h.where(), Retry: Retry{Attempts: 1}}
	if hop.Service = h.get("service").str("service"); hop.Service == "" {
		h.d.bad(h, "name the service or layer, e.g. service: checkout", "hop has no service")
	}
	if n := h.get("pool"); n != nil {
		n.known("pool", "name", "size", "shared", "replicas")
		pl := &Pool{Name: n.get("name").str("pool.name"), Replicas: 1}
		if pl.Name == "" {
			pl.Name = "pool"
		}
		if s, ok := n.get("size").integer("pool.size", 1, 1_000_000); ok {
			pl.Size = s
		} else if n.get("size") == nil {
			h.d.bad(n, "give the pool's size per replica", "pool has no size")
		}
		if r := n.get("replicas"); r != nil {
			pl.Replicas, _ = r.integer("pool.replicas", 1, 100_000)
			pl.Replicas = max(pl.Replicas, 1)
		}
		if s := n.get("shared"); s != nil {
			pl.Shared, _ = s.boolean("pool.shared")
		}
		hop.Pool = pl
	}
	if n := h.get("timeout"); n != nil {
		hop.Timeout = goDuration(n, "timeout")
	}
	if n := h.get("deadline"); n != nil {
		hop.Deadline = goDuration(n, "deadline")
	}
	if n := h.get("ignore_deadline"); n != nil {
		hop.IgnoreDeadline, _ = n.boolean("ignore_deadline")
	}
	if n := h.get("propagate_deadline"); n != nil {
		hop.PropagateDeadline, _ = n.boolean("propagate_deadline")
	}
	if n := h.get("retry"); n != nil {
		hop.Retry = callPathRetry(n)
	}
	if n := h.get("breaker"); n != nil && (n.isMap() || n.str("breaker") != "none") {
		n.known("breaker", "scope")
		scope := n.get("scope").str("breaker.scope")
		switch scope {
		case "":
			scope = "process"
		case "process", "pod", "fleet":
		default:
			h.d.bad(n.get("scope"), "process (each instance trips its own) or fleet (one shared state)", "breaker scope %q", scope)
		}
		if scope == "pod" {
			scope = "process"
		}
		hop.Breaker = &Breaker{Kind: "breaker", Scope: scope, Source: n.where()}
	}
	return hop
}

func callPathRetry(n *node) Retry {
	n.known("retry", "attempts", "backoff", "base", "max", "multiplier", "jitter", "on", "budget", "idempotency_key", "honour_retry_after")
	r := Retry{Attempts: 1}
	if a, ok := n.get("attempts").integer("attempts", 1, 100); ok {
		r.Attempts = a
	} else if n.get("attempts") == nil {
		n.d.bad(n, "attempts counts the first one: 1 never retries", "retry has no attempts")
	}
	if on := n.get("on"); on != nil {
		for _, name := range on.strs("on") {
			c, ok := classAliases[strings.ToLower(name)]
			if !ok {
				n.d.bad(on, "one of timeout, connect_error, reset, 5xx, 429", "unknown failure class %q", name)
				continue
			}
			r.On = r.On.With(c)
		}
	} else if r.Attempts > 1 {
		n.d.bad(n, "name the failures retried, e.g. on: [timeout, 5xx]", "retry has no on: list")
	}
	b := Backoff{Kind: BackoffNone, Multiplier: 2, Jitter: JitterNone}
	if v := n.get("base"); v != nil {
		b.Base, b.Kind = goDuration(v, "base"), BackoffExponential
	}
	if v := n.get("max"); v != nil {
		b.Max = goDuration(v, "max")
	}
	if v := n.get("backoff"); v != nil {
		switch k := v.str("backoff"); k {
		case BackoffNone, BackoffConstant, BackoffExponential:
			b.Kind = k
		default:
			n.d.bad(v, "none, constant or exponential", "backoff %q", k)
		}
	}
	if b.Kind != BackoffNone && b.Base <= 0 {
		n.d.bad(n, "give base: the first sleep, e.g. base: 100ms", "backoff %s without a base", b.Kind)
	}
	if v := n.get("multiplier"); v != nil {
		b.Multiplier, _ = v.number("multiplier", 1, 100)
	}
	if v := n.get("jitter"); v != nil {
		switch j := v.str("jitter"); j {
		case JitterNone, JitterFull:
			b.Jitter = j
		default:
			f, err := strconv.ParseFloat(j, 64)
			if err != nil || !(f > 0 && f <= 1) {
				n.d.bad(v, "none, full, or a factor in (0, 1] for ±f proportional jitter", "jitter %q", j)
				break
			}
			b.Jitter, b.JitterFactor = JitterProportional, f
		}
	}
	r.Backoff = b
	if v := n.get("budget"); v != nil {
		r.Budget = callPathBudget(v)
	}
	if v := n.get("idempotency_key"); v != nil {
		r.IdempotencyKey, _ = v.boolean("idempotency_key")
	}
	if v := n.get("honour_retry_after"); v != nil {
		r.HonourRetryAfter, _ = v.boolean("honour_retry_after")
	}
	return r
}

// callPathBudget reads none, a percentage ("10%") or a mapping.
func callPathBudget(v *node) *Budget {
	if !v.isMap() {
		s := v.str("budget")
		if s == "none" || s == "" {
			return nil
		}
		pct, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
		if !strings.HasSuffix(s, "%") || err != nil || !(pct > 0 && pct <= 100) {
			v.d.bad(v, "none, a percentage such as 10%, or {ratio: 0.1, per_second: 5, scope: fleet}", "budget %q", s)
			return nil
		}
		return &Budget{Kind: "ratio", Ratio: pct / 100, Scope: "process"}
	}
	v.known("budget", "ratio", "per_second", "scope")
	b := &Budget{Kind: "ratio", Scope: "process"}
	b.Ratio, _ = v.get("ratio").number("budget.ratio", 0, 1)
	if n := v.get("per_second"); n != nil {
		b.PerSecond, _ = n.number("budget.per_second", 0, 1e6)
	}
	if n := v.get("scope"); n != nil {
		switch s := n.str("budget.scope"); s {
		case "process", "pod":
		case "fleet":
			b.Scope = s
		default:
			v.d.bad(n, "process or fleet", "budget scope %q", s)
		}
	}
	return b
}

// goDuration reads a Go duration ("200ms", "1.5s").
func goDuration(n *node, what string) Duration {
	s, ok := n.scalar(what)
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d < 0 || d > 24*time.Hour {
		n.d.bad(n, "a duration such as 200ms, 1.5s or 2m", "%s %q", what, s)
		return 0
	}
	return Duration(d)
}

// parseRate reads requests per second: 400, 400/s, 24000/m, 1e6/h.
func parseRate(s string) (float64, bool) {
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "rps"))
	per := 1.0
	if i := strings.IndexByte(s, '/'); i >= 0 {
		switch strings.TrimSpace(s[i+1:]) {
		case "s", "sec":
		case "m", "min":
			per = 60
		case "h":
			per = 3600
		default:
			return 0, false
		}
		s = s[:i]
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || v <= 0 || v/per > 1e7 {
		return 0, false
	}
	return v / per, true
}

// ParseRate reads a --rate value such as 400/s.
func ParseRate(s string) (float64, error) {
	if v, ok := parseRate(s); ok {
		return v, nil
	}
	return 0, fmt.Errorf("rate %q: want requests per second, e.g. 400/s or 24000/m", clean(s))
}
