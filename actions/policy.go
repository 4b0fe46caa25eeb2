package actions

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/config"
)

// Role names built into every policy.
const (
	RoleViewer    = "viewer"
	RoleResponder = "responder"
	RoleCommander = "commander"
	// RoleAutomation is the role of the actor Automation: unattended
	// playbooks, scripts and the autopilot. It may use every kind that
	// policy.kinds.automation lists (all by default) and never approves.
	RoleAutomation = "automation"
)

// Automation is the actor name of unattended writers; bound to its own
// Redis user (`stormctl acl print --role automation --actor automation`),
// nobody else can write, request or approve as it.
const Automation = "automation"

// Policy decides who may pull which lever, and how far: roles, approval,
// maximum TTLs, blast radius and the rate limit.
type Policy struct {
	roles       map[string]string
	defaultRole string
	kinds       map[string][]Kind
	approval    []Kind
	approvers   []string
	maxTTL      map[Kind]time.Duration
	blastRadius int
	rate        controlplane.RateLimit
	evidence    map[Kind][]string
}

// Policy defaults.
const (
	DefaultBlastRadius  = 1
	DefaultRateWindow   = time.Minute
	DefaultRatePerActor = 6
	DefaultRateOverall  = 20
)

// NewPolicy builds a policy from a context's policy and evidence sections.
// Unknown kinds and roles are errors, and a max TTL above the kind's
// built-in maximum is refused: config may lower a maximum, never raise it.
func NewPolicy(p config.Policy, evidence map[string][]string) (*Policy, error) {
	all := make([]Kind, len(Specs))
	for i, ks := range Specs {
		all[i] = ks.Kind
	}
	pol := &Policy{
		roles:       p.Roles,
		defaultRole: p.DefaultRole,
		kinds:       map[string][]Kind{RoleViewer: nil, RoleResponder: all, RoleCommander: all, RoleAutomation: all},
		approvers:   p.Approvers,
		maxTTL:      map[Kind]time.Duration{},
		blastRadius: p.BlastRadius,
		rate: controlplane.RateLimit{Window: time.Duration(p.RateLimit.Window),
			PerActor: p.RateLimit.PerActor, Overall: p.RateLimit.Overall},
		evidence: map[Kind][]string{},
	}
	if pol.defaultRole == "" {
		pol.defaultRole = RoleResponder
	}
	if pol.blastRadius <= 0 {
		pol.blastRadius = DefaultBlastRadius
	}
	if pol.rate.Window <= 0 {
		pol.rate.Window = DefaultRateWindow
	}
	if pol.rate.PerActor <= 0 {
		pol.rate.PerActor = DefaultRatePerActor
	}
	if pol.rate.Overall <= 0 {
		pol.rate.Overall = DefaultRateOverall
	}
	for _, role := range sortedKeys(p.Kinds) {
		ks, err := kindList("policy.kinds."+role, p.Kinds[role])
		if err != nil {
			return nil, err
		}
		pol.kinds[role] = ks
	}
	var err error
	if pol.approval, err = kindList("policy.approval", p.Approval); err != nil {
		return nil, err
	}
	for _, ks := range Specs {
		pol.maxTTL[ks.Kind] = ks.MaxTTL
		pol.evidence[ks.Kind] = ks.Evidence
	}
	for _, k := range sortedKeys(p.MaxTTL) {
		ks, err := ParseKind(k)
		if err != nil {
			return nil, fmt.Errorf("policy.max-ttl: %w", err)
		}
		d := time.Duration(p.MaxTTL[k])
		if d <= 0 || d > ks.MaxTTL {
			return nil, fmt.Errorf("policy.max-ttl.%s: %s is not between 0 and the built-in maximum %s (config may only lower it)", k, d, ks.MaxTTL)
		}
		pol.maxTTL[ks.Kind] = d
	}
	for _, k := range sortedKeys(evidence) {
		ks, err := ParseKind(k)
		if err != nil {
			return nil, fmt.Errorf("evidence: %w", err)
		}
		if len(evidence[k]) == 0 {
			return nil, fmt.Errorf("evidence.%s: list at least one saved query (use --force to act without evidence)", k)
		}
		pol.evidence[ks.Kind] = evidence[k]
	}
	roles := append(sortedKeys(pol.kinds), pol.defaultRole)
	for _, actor := range sortedKeys(p.Roles) {
		roles = append(roles, p.Roles[actor])
	}
	for _, r := range append(roles, p.Approvers...) {
		if _, ok := pol.kinds[r]; !ok {
			return nil, fmt.Errorf("policy: role %q has no kinds entry (roles: %v)", r, sortedKeys(pol.kinds))
		}
	}
	return pol, nil
}

func kindList(where string, names []string) ([]Kind, error) {
	out := make([]Kind, 0, len(names))
	for _, n := range names {
		ks, err := ParseKind(n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		out = append(out, ks.Kind)
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// Role is the role of actor.
func (p *Policy) Role(actor string) string {
	if r, ok := p.roles[actor]; ok {
		return r
	}
	if actor == Automation {
		return RoleAutomation
	}
	return p.defaultRole
}

// Allows says whether actor's role may use kind k.
func (p *Policy) Allows(actor string, k Kind) bool {
	return slices.Contains(p.kinds[p.Role(actor)], k)
}

// MayApprove says whether actor may approve an action of kind k.
func (p *Policy) MayApprove(actor string, k Kind) bool {
	if actor == Automation || p.Role(actor) == RoleAutomation {
		return false // a second person is a person
	}
	if len(p.approvers) > 0 && !slices.Contains(p.approvers, p.Role(actor)) {
		return false
	}
	return p.Allows(actor, k)
}

// NeedsApproval says whether kind k needs a second person.
func (p *Policy) NeedsApproval(k Kind) bool { return slices.Contains(p.approval, k) }

// MaxTTL is the longest a lever of kind k may be held.
func (p *Policy) MaxTTL(k Kind) time.Duration { return p.maxTTL[k] }

// BlastRadius is how many targets an action may name without --targets.
func (p *Policy) BlastRadius() int { return p.blastRadius }

// RateLimit is the budget of applied actions.
func (p *Policy) RateLimit() controlplane.RateLimit { return p.rate }

// Evidence lists the saved queries that can support kind k.
func (p *Policy) Evidence(k Kind) []string { return p.evidence[k] }
