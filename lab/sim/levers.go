package sim

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/open-feature/go-sdk/openfeature"

	"github.com/stormctl/stormctl/internal/yamlfile"
	"github.com/stormctl/stormctl/resilience"
)

// Levers is what the simulated services read from the control plane, once
// per scrape interval (as a provider's cached snapshot would answer).
type Levers interface {
	// Call returns the levers on calls from service to dependency.
	Call(service, dependency string) resilience.LeverState
	// Service returns the levers on a whole service.
	Service(service string) ServiceLevers
}

// ServiceLevers are the service-wide levers.
type ServiceLevers struct {
	ShedPercent       int
	Degraded          string
	AutoscalingFrozen bool
}

// noAttemptCap is the caller default handed to the levers: the cap a lever
// sets is then applied to each retry layer's own maximum.
const noAttemptCap = math.MaxInt32

// flagAutoscalingFrozen is DESIGN.md's flag key for the autoscaling lever,
// which resilience does not read.
const flagAutoscalingFrozen = "stormctl.autoscaling.frozen"

// FlagLevers reads the levers through an OpenFeature client, with
// resilience.Levers for the keys the middleware reads.
type FlagLevers struct {
	Client openfeature.IClient
	byName map[string]*resilience.Levers
}

func (l *FlagLevers) levers(service string) *resilience.Levers {
	if l.byName == nil {
		l.byName = map[string]*resilience.Levers{}
	}
	lv := l.byName[service]
	if lv == nil {
		lv = resilience.NewLevers(l.Client, service)
		l.byName[service] = lv
	}
	return lv
}

// Call implements Levers.
func (l *FlagLevers) Call(service, dependency string) resilience.LeverState {
	return l.levers(service).Dependency(context.Background(), dependency, noAttemptCap)
}

// Service implements Levers.
func (l *FlagLevers) Service(service string) ServiceLevers {
	ctx, lv := context.Background(), l.levers(service)
	ec := openfeature.NewTargetlessEvaluationContext(map[string]any{"service": service})
	return ServiceLevers{ShedPercent: lv.ShedPercent(ctx), Degraded: lv.Degraded(ctx),
		AutoscalingFrozen: l.Client.Boolean(ctx, flagAutoscalingFrozen, false, ec)}
}

// LeverEvent sets (or, with an empty Value, removes) a lever at a simulated
// time, for scripted rehearsals: kind and target as in DESIGN.md
// (retries checkout->payments off, breaker payments open, …). TTL, Reason
// and Force matter when the event is pulled through a control plane: TTL
// defaults to the kind's maximum, Reason to the event itself, and Force
// acts without supporting evidence (journaled as forced).
type LeverEvent struct {
	At     Duration `yaml:"at"`
	Kind   string   `yaml:"kind"`
	Target string   `yaml:"target"`
	Value  string   `yaml:"value"`
	TTL    Duration `yaml:"ttl"`
	Reason string   `yaml:"reason"`
	Force  bool     `yaml:"force"`
}

// ParseEvents reads a lever schedule: a YAML list of {at, kind, target,
// value, ttl, reason, force}.
func ParseEvents(file string, data []byte) ([]LeverEvent, error) {
	var evs []LeverEvent
	if err := decode(file, data, &evs); err != nil {
		return nil, err
	}
	doc, err := yamlfile.Parse(file, data)
	if err != nil {
		return nil, err
	}
	var errs yamlfile.Errors
	for i, e := range evs {
		err := checkLever(e.Kind, e.Value)
		switch {
		case err != nil:
		case e.Target == "":
			err = fmt.Errorf("target is required")
		case e.At < 0 || e.TTL < 0:
			err = fmt.Errorf("at and ttl must not be negative")
		}
		if err != nil {
			errs = append(errs, doc.Errorf(fmt.Sprintf("$[%d]", i), "kinds: retries (off, cap:N), breaker (open), autoscaling (frozen), degraded (a mode), shed (1-100)", "%v", err))
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].At < evs[j].At })
	return evs, errs.Err()
}

func checkLever(kind, value string) error {
	if value == "" {
		return nil
	}
	switch kind {
	case "retries":
		if value == "off" {
			return nil
		}
		if n, err := strconv.Atoi(strings.TrimPrefix(value, "cap:")); err == nil && n >= 1 && strings.HasPrefix(value, "cap:") {
			return nil
		}
	case "breaker":
		if value == "open" {
			return nil
		}
	case "autoscaling":
		if value == "frozen" {
			return nil
		}
	case "degraded":
		return nil
	case "shed":
		if n, err := strconv.Atoi(value); err == nil && n >= 1 && n <= 100 {
			return nil
		}
	default:
		return fmt.Errorf("unknown lever kind %q", kind)
	}
	return fmt.Errorf("bad value %q for lever kind %s", value, kind)
}

// eventLevers applies scheduled lever events over a base source, resolving
// targets most specific first: service->dependency, service, dependency.
type eventLevers struct {
	base   Levers
	events []LeverEvent
	next   int
	table  map[string]string // kind + " " + target → value
}

func newEventLevers(base Levers, events []LeverEvent) *eventLevers {
	return &eventLevers{base: base, events: events, table: map[string]string{}}
}

func (l *eventLevers) advance(now time.Duration) {
	for l.next < len(l.events) && l.events[l.next].At.D() <= now {
		e := l.events[l.next]
		if e.Value == "" {
			delete(l.table, e.Kind+" "+e.Target)
		} else {
			l.table[e.Kind+" "+e.Target] = e.Value
		}
		l.next++
	}
}

func (l *eventLevers) lookup(kind string, targets ...string) string {
	for _, t := range targets {
		if v, ok := l.table[kind+" "+t]; ok {
			return v
		}
	}
	return ""
}

func (l *eventLevers) Call(service, dependency string) resilience.LeverState {
	s := resilience.LeverState{RetriesEnabled: true, MaxAttempts: noAttemptCap}
	if l.base != nil {
		s = l.base.Call(service, dependency)
	}
	pair := service + "->" + dependency
	switch v := l.lookup("retries", pair, service); {
	case v == "off":
		s.RetriesEnabled, s.MaxAttempts = false, 1
	case strings.HasPrefix(v, "cap:"):
		n, _ := strconv.Atoi(v[4:])
		s.MaxAttempts = min(s.MaxAttempts, n)
	}
	if l.lookup("breaker", pair, service, dependency) == "open" {
		s.ForcedOpen = true
	}
	return s
}

func (l *eventLevers) Service(service string) ServiceLevers {
	var s ServiceLevers
	if l.base != nil {
		s = l.base.Service(service)
	}
	if v := l.lookup("shed", service); v != "" {
		s.ShedPercent, _ = strconv.Atoi(v)
	}
	if v := l.lookup("degraded", service); v != "" {
		s.Degraded = v
	}
	if l.lookup("autoscaling", service) == "frozen" {
		s.AutoscalingFrozen = true
	}
	return s
}

// refreshLevers reads every lever once; breakers learn the forced state.
func (s *Sim) refreshLevers() {
	s.levers.advance(s.now)
	for _, svc := range s.services {
		svc.lev = s.levers.Service(svc.name)
		for _, c := range svc.calls {
			c.lev = s.levers.Call(svc.name, c.spec.Target)
			if c.fleetBr != nil {
				c.fleetBr.SetForced(c.lev.ForcedOpen)
			}
			for _, p := range svc.pods {
				if br := p.breakers[c.idx]; br != nil {
					br.SetForced(c.lev.ForcedOpen)
				}
			}
		}
	}
}
