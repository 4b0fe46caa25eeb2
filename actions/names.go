package actions

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/lever"
)

// checkNames asks the inventory about every service and dependency named
// by the targets. A name the inventory cannot confirm (Prometheus down, no
// cached values) is still known when a lever in Redis already names it;
// otherwise it is refused, or with --force allowed and journaled as
// "target unverified". notes say where names were confirmed from when that
// was not the live inventory.
func (a *attempt) checkNames(ctx context.Context) (notes []string, v verdict, err error) {
	var held map[NameRole][]string // names of the levers in Redis, read once if needed
	ictx := ctx
	if a.spec.Force {
		// --force lets an unverifiable name through anyway: the inventory
		// gets the same short wait as the evidence.
		var cancel context.CancelFunc
		ictx, cancel = context.WithTimeout(ctx, ForceEvidenceWait)
		defer cancel()
	}
	for _, t := range a.targets {
		for _, n := range []struct {
			role NameRole
			name string
		}{{ServiceName, t.Service}, {DependencyName, t.Dependency}} {
			if n.name == "" {
				continue
			}
			known, near, ierr := a.s.Inventory.Known(ictx, n.role, n.name)
			if known {
				if ierr != nil {
					notes = appendOnce(notes, fmt.Sprintf("%s %q known from cached label values (%v)", n.role, n.name, ierr))
				}
				continue
			}
			hint := fmt.Sprintf("add it to %s in the context if it is real", n.role.inventoryKey())
			// Label values come from Prometheus (or its cache): only those
			// that could be a target are suggested, so none prints raw
			// control characters.
			near = slices.DeleteFunc(near, func(v string) bool { return lever.CheckName(string(n.role), v) != nil })
			if len(near) > 0 {
				hint = "did you mean " + strings.Join(near, " or ") + "?"
			}
			if tail := redirectHint(t.Name); tail != "" {
				hint += "; " + tail
			}
			if ierr == nil {
				return nil, refusal(hint, "unknown %s %q in target %q", n.role, n.name, t.Name), nil
			}
			if held == nil {
				if held, err = a.heldNames(ctx); err != nil {
					return nil, verdict{}, err
				}
			}
			if slices.Contains(held[n.role], n.name) {
				notes = appendOnce(notes, fmt.Sprintf("%s %q known from a lever in Redis (%v)", n.role, n.name, ierr))
				continue
			}
			why := fmt.Sprintf("cannot confirm that %s %q exists: it is not in the config inventory nor in any lever in Redis, and %v", n.role, n.name, ierr)
			if !a.spec.Force {
				return nil, refusal(hint+"; act anyway with --force (journaled as target unverified)", "%s", why), nil
			}
			a.unverified = append(a.unverified, fmt.Sprintf("%s %q", n.role, n.name))
			notes = appendOnce(notes, "target unverified: "+why+"; forced by "+a.actor)
		}
	}
	return notes, verdict{}, nil
}

// heldNames lists the services and dependencies that active levers name.
func (a *attempt) heldNames(ctx context.Context) (map[NameRole][]string, error) {
	ls, err := a.s.Store.Levers(ctx)
	if err != nil {
		return nil, fmt.Errorf("validation: read the levers in Redis: %w", err)
	}
	out := map[NameRole][]string{}
	for _, l := range ls {
		sc := lever.ScopeOf(l.Kind, l.Target)
		if sc.Service != "" {
			out[ServiceName] = append(out[ServiceName], sc.Service)
		}
		if sc.Dependency != "" {
			out[DependencyName] = append(out[DependencyName], sc.Dependency)
		}
	}
	return out, nil
}

// redirectHint explains a target cut short by the shell: unquoted,
// checkout->payments runs as `checkout-` with stdout sent to a file named
// payments.
func redirectHint(target string) string {
	if !strings.HasSuffix(target, "-") {
		return ""
	}
	return fmt.Sprintf("a target ending in '-' looks cut by the shell at '>': quote it, e.g. '%s>DEPENDENCY'", target)
}

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// outcomeNote is what the journal entries of an attempt add to their
// outcome about how its names were confirmed: "" when the live inventory
// confirmed them.
func (a *attempt) outcomeNote() string {
	if len(a.unverified) > 0 {
		return "target unverified: " + strings.Join(a.unverified, ", ") + " (forced by " + a.actor + ")"
	}
	if len(a.nameNotes) > 0 {
		return strings.Join(a.nameNotes, "; ")
	}
	return ""
}

// joinNote appends note to outcome, if there is one.
func joinNote(outcome, note string) string {
	if note == "" {
		return outcome
	}
	return outcome + "; " + note
}
