package policy

import (
	"strconv"
	"strings"
)

// gRPC's retry design (gRFC A6): maxAttempts counts the original and
// values above 5 are treated as 5; backoff is random(0, min(initialBackoff
// · backoffMultiplier^(n-1), maxBackoff)); a server's pushback is obeyed;
// retryThrottling lets a channel retry only while its token bucket holds
// more than maxTokens/2; a method's timeout is the whole call's deadline.
const grpcMaxAttempts = 5

func isGRPC(root *node) bool {
	return root.get("methodConfig") != nil || root.get("retryThrottling") != nil
}

// grpcCodes maps status codes (names or numbers) to failure classes.
var grpcCodes = map[string]ClassSet{
	"UNAVAILABLE":        ClassSet(0).With(ConnectError, Reset, ServerError),
	"DEADLINE_EXCEEDED":  ClassSet(0).With(Timeout),
	"RESOURCE_EXHAUSTED": ClassSet(0).With(Throttled),
	"INTERNAL":           ClassSet(0).With(ServerError),
	"UNKNOWN":            ClassSet(0).With(ServerError),
	"ABORTED":            ClassSet(0).With(ServerError),
	"DATA_LOSS":          ClassSet(0).With(ServerError),
}

var grpcCodeNames = []string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
	"UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// grpcConfig reads the methodConfig entries of a gRPC service config.
func grpcConfig(d *doc) []candidate {
	root := d.docs[0]
	var budget *Budget
	if rt := root.get("retryThrottling"); rt != nil {
		mt, _ := rt.get("maxTokens").integer("maxTokens", 1, 1000)
		ratio, _ := rt.get("tokenRatio").number("tokenRatio", 0.001, 1000)
		if mt == 0 || ratio == 0 {
			d.bad(rt, "gRPC needs maxTokens in (0, 1000] and tokenRatio > 0", "retryThrottling incomplete")
		}
		budget = &Budget{Kind: "tokens", MaxTokens: float64(mt), Ratio: ratio, Scope: "process"}
	}
	var out []candidate
	for _, mc := range root.get("methodConfig").items() {
		var keys, names []string
		target := ""
		for _, nm := range mc.get("name").items() {
			svc, m := nm.get("service").str("service"), nm.get("method").str("method")
			full := svc
			if m != "" {
				full += "/" + m
			}
			keys = append(keys, svc, full, m)
			if target == "" {
				target = svc
			}
			names = append(names, full)
		}
		label := strings.Join(names, ",")
		if label == "" {
			label = "default"
		}
		hop := &Hop{Service: "grpc:" + label, Format: FormatGRPC, Source: mc.where(), PropagateDeadline: true, Retry: Retry{Attempts: 1}}
		if t := mc.get("timeout"); t != nil {
			hop.Deadline = protoDuration(t, "timeout")
		}
		if rp := mc.get("retryPolicy"); rp != nil {
			hop.Source = rp.where()
			grpcRetry(rp, hop)
			hop.Retry.Budget = budget
		}
		if mc.get("hedgingPolicy") != nil {
			hop.Notes = append(hop.Notes, "hedgingPolicy sends attempts in parallel: not modelled")
		}
		out = append(out, candidate{name: label, keys: append(keys, label), target: target, hop: hop})
	}
	return out
}

func grpcRetry(rp *node, hop *Hop) {
	r := &hop.Retry
	bad := func(n *node, field, fix string) {
		rp.d.bad(n, fix, "retryPolicy.%s is required: a gRPC client rejects the service config without it", field)
	}
	if n := rp.get("maxAttempts"); n != nil {
		if a, ok := n.integer("maxAttempts", 2, 1<<31-1); ok {
			r.Attempts = a
			if a > grpcMaxAttempts {
				r.Attempts = grpcMaxAttempts
				hop.Notes = append(hop.Notes, "maxAttempts "+strconv.Itoa(a)+" is treated as 5 by gRPC")
			}
		}
	} else {
		bad(rp, "maxAttempts", "an integer > 1, counting the original attempt")
	}
	b := Backoff{Kind: BackoffExponential, Jitter: JitterFull}
	if n := rp.get("initialBackoff"); n != nil {
		b.Base = protoDuration(n, "initialBackoff")
	} else {
		bad(rp, "initialBackoff", "e.g. \"0.1s\"")
	}
	if n := rp.get("maxBackoff"); n != nil {
		b.Max = protoDuration(n, "maxBackoff")
	} else {
		bad(rp, "maxBackoff", "e.g. \"1s\"")
	}
	if n := rp.get("backoffMultiplier"); n != nil {
		b.Multiplier, _ = n.number("backoffMultiplier", 1e-9, 1000)
	} else {
		bad(rp, "backoffMultiplier", "a number > 0, e.g. 2")
	}
	r.Backoff = b
	codes := rp.get("retryableStatusCodes")
	if codes == nil {
		bad(rp, "retryableStatusCodes", "a non-empty list such as [\"UNAVAILABLE\"]")
	}
	for _, c := range codes.strs("retryableStatusCodes") {
		name := strings.ToUpper(c)
		if i, err := strconv.Atoi(c); err == nil && i >= 0 && i < len(grpcCodeNames) {
			name = grpcCodeNames[i]
		}
		known := false
		for _, n := range grpcCodeNames {
			known = known || n == name
		}
		if !known {
			rp.d.bad(codes, "a gRPC status code name such as UNAVAILABLE, or its number", "unknown status code %q", c)
		}
		r.On |= grpcCodes[name]
	}
	// gRPC obeys the server's grpc-retry-pushback-ms.
	r.HonourRetryAfter = true
}
