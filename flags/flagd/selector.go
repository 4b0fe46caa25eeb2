package flagd

import (
	"fmt"
	"strings"

	"github.com/stormctl/stormctl/lever"
)

// FlagSetID names the one flag set stormctl serves; a client selector
// "flagSetId=stormctl" (flagd's own selector syntax) selects all of it.
const FlagSetID = "stormctl"

// Selector narrows a configuration to the rules a client can match: a
// service's sidecar or in-process provider asks for "service=checkout" and
// gets the rules whose service is checkout or that name no service (a bare
// breaker target is a dependency). The zero Selector selects everything.
type Selector struct {
	Service, Dependency string
}

// ParseSelector reads a selector: comma-separated key=value pairs with keys
// service and dependency, or flagd's "flagSetId=stormctl"; "" selects all.
func ParseSelector(s string) (Selector, error) {
	var sel Selector
	if strings.TrimSpace(s) == "" {
		return sel, nil
	}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return Selector{}, fmt.Errorf("selector %q: want key=value pairs (service=NAME, dependency=NAME)", s)
		}
		switch k {
		case "service", "dependency":
			if err := lever.CheckName(k, v); err != nil {
				return Selector{}, fmt.Errorf("selector %q: %w", s, err)
			}
			if k == "service" {
				sel.Service = v
			} else {
				sel.Dependency = v
			}
		case "flagSetId":
			if v != FlagSetID && v != "" {
				return Selector{}, fmt.Errorf("selector %q: this server serves the flag set %q only", s, FlagSetID)
			}
		default:
			return Selector{}, fmt.Errorf("selector %q: unknown key %q; use service, dependency or flagSetId", s, k)
		}
	}
	return sel, nil
}

// String is the selector in the syntax ParseSelector reads ("" for all).
func (s Selector) String() string {
	var parts []string
	if s.Service != "" {
		parts = append(parts, "service="+s.Service)
	}
	if s.Dependency != "" {
		parts = append(parts, "dependency="+s.Dependency)
	}
	return strings.Join(parts, ",")
}

// admits says whether a client with this selector can match a lever of scope.
func (s Selector) admits(sc lever.Scope) bool {
	return (s.Service == "" || sc.Service == "" || sc.Service == s.Service) &&
		(s.Dependency == "" || sc.Dependency == "" || sc.Dependency == s.Dependency)
}
