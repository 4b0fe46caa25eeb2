package queries

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// snippet writes the config that makes the fitting packs answer: the label
// overrides per pack (contexts.<ctx>.packs) and, for a named service, the
// pack that answers its traffic queries (contexts.<ctx>.services). Names are
// written as quoted YAML strings: they come from the server.
func snippet(dg *Diagnosis, ctx string) string {
	var fits []PackFinding
	for _, f := range dg.Packs {
		if f.Fits() {
			fits = append(fits, f)
		}
	}
	if len(fits) == 0 {
		return ""
	}
	if ctx == "" {
		ctx = "<context>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "contexts:\n  %s:\n", strconv.Quote(ctx))
	if dg.Service != "" {
		// The best fit, not the first: a pack that sees the service's
		// calls, then one that sees only the requests it received.
		pack := fits[0].Pack
		for _, side := range []string{SideClient, SideServer} {
			if i := slices.IndexFunc(fits, func(f PackFinding) bool { return f.Side == side }); i >= 0 {
				pack = fits[i].Pack
				break
			}
		}
		fmt.Fprintf(&b, "    services:\n      %s: {pack: %s}\n", strconv.Quote(dg.Service), pack)
	}
	if dg.Service == "" {
		fmt.Fprintf(&b, "    # and pick the pack per service: services: {<service>: {pack: %s}}\n", fits[0].Pack)
	}
	first := true
	for _, f := range fits {
		if len(f.Labels) == 0 {
			continue
		}
		if first {
			b.WriteString("    packs:\n")
			first = false
		}
		keys := make([]string, 0, len(f.Labels))
		for k := range f.Labels {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		pairs := make([]string, len(keys))
		for i, k := range keys {
			pairs[i] = k + ": " + strconv.Quote(f.Labels[k])
		}
		fmt.Fprintf(&b, "      %s:\n        labels: {%s}\n", f.Pack, strings.Join(pairs, ", "))
	}
	return b.String()
}
