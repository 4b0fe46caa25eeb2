// Package flagd serves stormctl's flag contract (lever.Table) over flagd's
// own protocols — sync (flagd.sync.v1), evaluation (flagd.evaluation.v1 and
// v2, gRPC and Connect) and OFREP — so that a service in any language obeys
// the levers through the flagd provider it already has. The levers are
// rendered as a flagd flag configuration, validated by flagd's own
// evaluator (github.com/open-feature/flagd/core) before any client sees it.
// The package reads levers (through flags.Provider) and never writes them.
package flagd

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strconv"
	"time"

	"github.com/stormctl/stormctl/lever"
)

// SchemaURL is the JSON schema of a flagd flag configuration.
const SchemaURL = "https://flagd.dev/schema/v0/flags.json"

// Variant names that no lever value decides.
const (
	VariantAbsent   = "absent"
	VariantFailSafe = "fail-safe"
)

// Config is a flagd flag configuration: flags.json of flagd-schemas.
type Config struct {
	Schema   string          `json:"$schema,omitempty"`
	Metadata map[string]any  `json:"metadata"`
	Flags    map[string]Flag `json:"flags"`
}

// Flag is one flag of a Config.
type Flag struct {
	State    string         `json:"state"`
	Variants map[string]any `json:"variants"`
	// DefaultVariant nil is JSON null: the caller's default value applies.
	DefaultVariant *string        `json:"defaultVariant"`
	Targeting      map[string]any `json:"targeting,omitempty"`
	Metadata       map[string]any `json:"metadata,omitempty"`
}

// Input is the lever state to render.
type Input struct {
	// Levers are the live levers; values or targets that do not parse are
	// left out (and counted in the set metadata "skipped").
	Levers []lever.Lever
	// Stale says Redis has been unreachable past the grace period: flags
	// with a fail-safe value serve it instead of their rules.
	Stale bool
	// FailSafe maps flag keys to the value served while Stale.
	FailSafe map[string]any
	// Versions is the version applied per lever member, releases included:
	// what a client sent this state acknowledges. It does not change the
	// rendering.
	Versions map[string]int64
}

// rule is one lever as a rendered flag needs it.
type rule struct {
	scope   lever.Scope
	target  string
	variant string
	src     *lever.Lever
}

// Version identifies a lever state: the same levers at the same versions
// give the same version on every replica, so it serves as an ETag.
func Version(in Input) string {
	h := sha256.New()
	ls := append([]lever.Lever(nil), in.Levers...)
	lever.Sort(ls)
	for _, l := range ls {
		h.Write([]byte(lever.Member(l.Kind, l.Target) + "=" + strconv.FormatInt(l.Version, 10) + "\n"))
	}
	if in.Stale {
		h.Write([]byte("stale\n"))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Render builds the configuration for the clients of one selector: every
// flag of the contract with its type and absent value, and each lever as a
// rule over the context attributes service and dependency, most specific
// first, in one JsonLogic "if" chain.
func Render(in Input, sel Selector) *Config {
	byKind, skipped := rules(in.Levers, sel)
	cfg := &Config{
		Schema:   SchemaURL,
		Metadata: map[string]any{"flagSetId": FlagSetID, "version": Version(in), "skipped": skipped, "stale": in.Stale},
		Flags:    make(map[string]Flag, len(lever.Table)),
	}
	if s := sel.String(); s != "" {
		cfg.Metadata["selector"] = s
	}
	for _, f := range lever.Table {
		if fs, ok := in.FailSafe[f.Key]; ok && in.Stale {
			if v, ok := f.Coerce(fs); ok {
				cfg.Flags[f.Key] = failSafeFlag(v.Get(f.Type))
				continue
			}
		}
		cfg.Flags[f.Key] = renderFlag(f, byKind[f.Kind])
	}
	return cfg
}

// Marshal is the configuration as JSON, keys sorted, so equal
// configurations are equal bytes; "->" stays readable (no HTML escaping).
func (c *Config) Marshal() []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c); err != nil {
		panic("flagd: a rendered configuration does not marshal: " + err.Error()) // only maps, strings, numbers, bools
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// rules parses the levers into rules per kind, most specific first, and
// counts those it had to leave out.
func rules(levers []lever.Lever, sel Selector) (map[lever.Kind][]rule, int) {
	out := map[lever.Kind][]rule{}
	skipped := 0
	for i := range levers {
		l := &levers[i]
		spec, ok := lever.SpecOf(l.Kind)
		if !ok {
			skipped++
			continue
		}
		t, err := spec.ParseTarget(l.Target)
		v, verr := spec.ParseValue(l.Value)
		if err != nil || verr != nil || t.Name != l.Target || v != l.Value {
			skipped++
			continue
		}
		sc := lever.ScopeOf(l.Kind, l.Target)
		if !sel.admits(sc) {
			continue
		}
		out[l.Kind] = append(out[l.Kind], rule{scope: sc, target: l.Target, variant: variantName(l.Kind, l.Value), src: l})
	}
	for _, rs := range out {
		sort.SliceStable(rs, func(i, j int) bool {
			if a, b := specificity(rs[i].scope), specificity(rs[j].scope); a != b {
				return a < b
			}
			return rs[i].target < rs[j].target
		})
	}
	return out, skipped
}

// specificity orders scopes as lever.Match tries them: service->dependency,
// then service, then dependency.
func specificity(sc lever.Scope) int {
	switch {
	case sc.Service != "" && sc.Dependency != "":
		return 0
	case sc.Service != "":
		return 1
	}
	return 2
}

// variantName is the lever value, except that a degraded mode named like
// the absent variant gets a name no lever value can have.
func variantName(kind lever.Kind, value string) string {
	if value == VariantAbsent || value == VariantFailSafe {
		return string(kind) + ":" + value
	}
	return value
}

func renderFlag(f lever.Flag, rs []rule) Flag {
	fl := Flag{State: "ENABLED", Variants: map[string]any{}, Metadata: map[string]any{"levers": len(rs)}}
	if av, ok := f.AbsentValue(); ok {
		name := VariantAbsent
		fl.Variants[name] = av.Get(f.Type)
		fl.DefaultVariant = &name
	}
	if f.Key == lever.RetriesMaxAttempts {
		// The variant "off" always exists, so the flag has one even with no lever.
		fl.Variants[lever.ValueOff] = int64(1)
	}
	if len(rs) == 0 {
		return fl
	}
	chain := make([]any, 0, 2*len(rs)+1)
	for _, r := range rs {
		v, err := f.Value(r.src.Value)
		if err != nil {
			continue // rules() parsed the value; unreachable
		}
		fl.Variants[r.variant] = v
		chain = append(chain, condition(r.scope), r.variant)
		leverMeta(fl.Metadata, r)
	}
	if fl.DefaultVariant != nil {
		chain = append(chain, *fl.DefaultVariant)
	} else {
		chain = append(chain, nil)
	}
	fl.Targeting = map[string]any{"if": chain}
	return fl
}

// condition matches the context attributes a scope names, strictly (a
// number 1 is not the service "1").
func condition(sc lever.Scope) any {
	eq := func(attr, v string) any { return map[string]any{"===": []any{map[string]any{"var": attr}, v}} }
	switch {
	case sc.Service != "" && sc.Dependency != "":
		return map[string]any{"and": []any{eq("service", sc.Service), eq("dependency", sc.Dependency)}}
	case sc.Service != "":
		return eq("service", sc.Service)
	}
	return eq("dependency", sc.Dependency)
}

// leverMeta records who set the lever of r, under keys prefixed by its
// target ("checkout->payments.actor").
func leverMeta(m map[string]any, r rule) {
	p := r.target + "."
	m[p+"action_id"] = r.src.ActionID
	m[p+"actor"] = r.src.Actor
	m[p+"version"] = r.src.Version
	if r.src.Incident != "" {
		m[p+"incident"] = r.src.Incident
	}
	if !r.src.ExpiresAt.IsZero() {
		m[p+"expires_at"] = r.src.ExpiresAt.UTC().Format(time.RFC3339Nano)
	}
}

func failSafeFlag(v any) Flag {
	name := VariantFailSafe
	return Flag{State: "ENABLED", Variants: map[string]any{name: v}, DefaultVariant: &name,
		Metadata: map[string]any{"failsafe": true}}
}
