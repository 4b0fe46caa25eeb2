package playbooks

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stormctl/stormctl/lever"
	"github.com/stormctl/stormctl/queries"
)

// Bounds on step timing: a wait longer than an hour is no longer a step of
// an incident response, and polling faster than every second only loads
// a Prometheus that may be struggling too.
const (
	MaxWait      = time.Hour
	MinEvery     = time.Second
	DefaultEvery = 15 * time.Second
	MaxFor       = 24 * time.Hour
)

// queryParams are the keys a check or wait step's params may have.
var queryParams = []string{queries.ParamService, queries.ParamDependency, queries.ParamPool, queries.ParamWindow, "pack"}

// field is one optional field of a step, for the "does not apply" check.
type field struct {
	name  string
	set   bool
	types []StepType
}

func (s *Step) fields() []field {
	cw := []StepType{Check, Wait}
	return []field{
		{"query", s.Query != "", cw}, {"params", len(s.Params) > 0, cw}, {"expect", s.Expect != "", cw},
		{"for", s.For != 0, cw}, {"within", s.Within != 0, cw}, {"match", s.Match != "", cw}, {"no_data", s.NoData != "", cw},
		{"on_fail", s.OnFail != "", cw},
		{"timeout", s.Timeout != 0, []StepType{Wait}}, {"every", s.Every != 0, []StepType{Wait}},
		{"op", s.Op != "", []StepType{Action}}, {"kind", s.Kind != "", []StepType{Action}},
		{"target", s.Target != "", []StepType{Action}}, {"value", s.Value != "", []StepType{Action}},
		{"ttl", s.TTL != 0, []StepType{Action}}, {"reason", s.Reason != "", []StepType{Action}},
		{"requires", len(s.Requires) > 0, []StepType{Action}}, {"supersede", s.Supersede, []StepType{Action}},
		{"force", s.Force, []StepType{Action}}, {"rollback", s.Rollback != "", []StepType{Action}},
		{"text", s.Text != "", []StepType{Note}},
		{"question", s.Question != "", []StepType{Ask}}, {"choices", len(s.Choices) > 0, []StepType{Ask}},
		{"default", s.Default != "", []StepType{Ask}},
	}
}

func (c *checker) step(p string, i int, s *Step) {
	if !slices.Contains(StepTypes, s.Type) {
		c.bad(p+".type", "use one of: "+joinTypes(StepTypes), "step %q has type %q", s.ID, s.Type)
		return
	}
	for name, d := range map[string]Duration{"for": s.For, "within": s.Within, "timeout": s.Timeout, "every": s.Every, "ttl": s.TTL} {
		if d == badDuration {
			c.bad(p+"."+name, "write a duration such as 30s, 5m or 1h", "%s is not a duration", name)
		}
	}
	for _, f := range s.fields() {
		if f.set && !slices.Contains(f.types, s.Type) {
			c.bad(p+"."+f.name, "remove it; it applies to "+joinTypes(f.types)+" steps", "%s does not apply to a %s step", f.name, s.Type)
		}
	}
	if s.When != nil {
		c.when(p+".when", i, s.When)
	}
	switch s.Type {
	case Check, Wait:
		c.query(p, s)
	case Action:
		c.action(p, i, s)
	case Note:
		if strings.TrimSpace(s.Text) == "" {
			c.bad(p, "add text: the guidance to read", "note step %q has no text", s.ID)
		}
		c.template(p+".text", s.Text)
	case Ask:
		c.ask(p, s)
	}
}

func (c *checker) when(p string, i int, w *When) {
	n := 0
	for _, id := range []string{w.Passed, w.Failed, w.Skipped, w.Param} {
		if id != "" {
			n++
		}
	}
	switch {
	case n != 1:
		c.bad(p, "write when: {passed: STEP}, {failed: STEP}, {skipped: STEP} or {param: NAME}", "when needs exactly one of passed, failed, skipped or param")
	case w.Param != "":
		c.whenParam(p+".param", w.Param)
	case w.Passed != "":
		c.ref(p+".passed", "when", w.Passed, i, Check, Wait)
	case w.Skipped != "":
		if s := c.ref(p+".skipped", "when", w.Skipped, i); s != nil && s.When == nil {
			c.bad(p+".skipped", fmt.Sprintf("give step %q a when: condition", s.ID),
				"step %q has no when: condition, so it is never skipped and this step could never run", s.ID)
		}
	default:
		if s := c.ref(p+".failed", "when", w.Failed, i, Check, Wait); s != nil && s.OnFail != "continue" {
			c.bad(p+".failed", fmt.Sprintf("set on_fail: continue on step %q", s.ID),
				"step %q stops the run when it fails, so this step could never run", s.ID)
		}
	}
}

// whenParam checks that a when: {param: NAME} names an optional parameter
// without a default: any other is always given, so the condition would
// always hold.
func (c *checker) whenParam(p, name string) {
	i := slices.IndexFunc(c.pb.Parameters, func(prm Parameter) bool { return prm.Name == name })
	switch {
	case i < 0:
		c.bad(p, "declare it under parameters, or name one of: "+strings.Join(c.paramNames(), ", "), "when names unknown parameter %q", name)
	case c.pb.Parameters[i].Required || c.pb.Parameters[i].Default != "":
		c.bad(p, "make the parameter optional without a default, or drop the when:",
			"parameter %q is always given, so this condition always holds", name)
	}
}

func (c *checker) query(p string, s *Step) {
	var q *queries.Query
	switch {
	case s.Query == "":
		c.bad(p, "name a saved query id (`stormctl query list`)", "%s step %q has no query", s.Type, s.ID)
	case c.literal(p+".query", "query", s.Query):
		var err error
		if q, err = c.cat.Query(s.Query); err != nil {
			c.bad(p+".query", "", "%v", err)
		}
	}
	for _, k := range sortedKeys(s.Params) {
		c.queryParam(fmt.Sprintf("%s.params.%s", p, k), q, k, s.Params[k])
	}
	if s.Expect == "" {
		c.bad(p, `add expect, e.g. "> 1.3" or "< 1.1"`, "%s step %q has no expectation", s.Type, s.ID)
	} else if e, err := ParseExpectation(s.Expect); err != nil {
		c.bad(p+".expect", `write OP NUMBER, e.g. "> 1.3", "<= 0.7" or "== 0"`, "bad expectation: %v", err)
	} else {
		s.expect = e
		for name, d := range map[string]Duration{"for": s.For, "within": s.Within} {
			if d > 0 && e.overTime(true) == "" {
				c.bad(p+"."+name, "remove "+name+", or compare with >, >=, < or <=", "%s needs an ordering comparison, not %s", name, e.Op)
			}
		}
	}
	for name, d := range map[string]Duration{"for": s.For, "within": s.Within} {
		if d.D() > MaxFor {
			c.bad(p+"."+name, "use a window of at most 24h", "%s %s is out of range", name, d.D())
		}
	}
	if s.For > 0 && s.Within > 0 {
		c.bad(p+".within", "keep for (held throughout the window) or within (held at some moment in it)", "for and within exclude each other")
	}
	c.enum(p+".match", "match", s.Match, "all", "any")
	c.enum(p+".no_data", "no_data", s.NoData, "fail", "pass")
	c.enum(p+".on_fail", "on_fail", s.OnFail, "stop", "continue")
	if s.Type != Wait {
		return
	}
	if s.Timeout == 0 || s.Timeout.D() > MaxWait {
		c.bad(p+".timeout", "bound the wait, e.g. timeout: 5m", "wait step %q needs a timeout of at most 1h", s.ID)
	}
	if s.For > 0 && s.Timeout > 0 && s.For > s.Timeout {
		c.bad(p+".timeout", "wait at least as long as the for: window", "timeout %s is shorter than for %s", s.Timeout.D(), s.For.D())
	}
	if s.Every == 0 {
		s.Every = Duration(DefaultEvery)
		if s.Timeout > 0 {
			s.Every = min(s.Every, s.Timeout)
		}
	}
	if s.Every != badDuration && (s.Every.D() < MinEvery || (s.Timeout > 0 && s.Every > s.Timeout)) {
		c.bad(p+".every", "poll every 1s or more, and no longer than the timeout", "every %s is out of range", s.Every.D())
	}
}

func (c *checker) queryParam(p string, q *queries.Query, key, v string) {
	if !slices.Contains(queryParams, key) {
		c.bad(p, "use "+strings.Join(queryParams, ", "), "unknown query parameter %q", key)
		return
	}
	if q != nil && key != "pack" && !slices.Contains(q.Params, key) {
		c.bad(p, fmt.Sprintf("query %s takes %s", q.ID, strings.Join(q.Params, ", ")), "query %s has no parameter %q", q.ID, key)
		return
	}
	if isTemplate(v) {
		c.template(p, v)
		return
	}
	var err error
	switch key {
	case queries.ParamWindow:
		_, err = queries.ParseWindow(v)
	case "pack":
		_, err = c.cat.Pack(v)
	default:
		err = queries.ValidateValue(key, v)
	}
	if err != nil {
		c.bad(p, "fix the value", "%v", err)
	}
}

func (c *checker) action(p string, i int, s *Step) {
	op := s.Op
	if op == "" {
		op = OpApply
	}
	if op != OpApply && op != OpRelease {
		c.bad(p+".op", "use apply or release", "unknown op %q", s.Op)
	}
	if s.Kind == "" {
		c.bad(p, "add kind: one of "+kindNames(), "action step %q has no lever kind", s.ID)
	} else if c.literal(p+".kind", "kind", s.Kind) && !slices.Contains(lever.Kinds, lever.Kind(s.Kind)) {
		c.bad(p+".kind", "use one of "+kindNames(), "unknown lever kind %q", s.Kind)
	}
	if s.Target == "" {
		c.bad(p, `add target, e.g. "{{ .params.service }}->{{ .params.dependency }}"`, "action step %q has no target", s.ID)
	}
	c.template(p+".target", s.Target)
	c.template(p+".reason", s.Reason)
	if op == OpRelease {
		for _, f := range []field{{"value", s.Value != "", nil}, {"ttl", s.TTL != 0, nil}, {"supersede", s.Supersede, nil}, {"force", s.Force, nil}} {
			if f.set {
				c.bad(p+"."+f.name, "remove it: a release restores what the lever held before", "%s does not apply to a release", f.name)
			}
		}
	} else {
		if s.Value == "" {
			c.bad(p, "add value, e.g. off, cap:2, open, frozen, on or a percent", "action step %q has no value", s.ID)
		}
		c.template(p+".value", s.Value)
		if s.TTL == 0 {
			c.bad(p, "add ttl: every lever expires by itself (e.g. ttl: 30m)", "action step %q has no ttl", s.ID)
		}
		// The step would be refused by the TTL guard when it runs, in the
		// middle of an incident; say so now. (A context's policy may lower
		// the maximum further; that is checked at run time.)
		if ks, ok := lever.SpecOf(lever.Kind(s.Kind)); ok && s.TTL != badDuration && s.TTL.D() > ks.MaxTTL {
			c.bad(p+".ttl", fmt.Sprintf("use ttl: %s or less, and extend it during the run if still needed", ks.MaxTTL),
				"ttl %s exceeds the maximum %s for %s levers", s.TTL.D(), ks.MaxTTL, s.Kind)
		}
		if strings.TrimSpace(s.Reason) == "" {
			c.bad(p, "add reason: what the responder saw and why this lever helps", "action step %q has no reason", s.ID)
		}
	}
	for j, r := range s.Requires {
		c.ref(fmt.Sprintf("%s.requires[%d]", p, j), "requires", r, i, Check, Wait)
	}
	if s.Rollback != "" {
		if r := c.ref(p+".rollback", "rollback", s.Rollback, -1, Action); r != nil {
			if r == s {
				c.bad(p+".rollback", "name the step that undoes this one", "step %q cannot roll itself back", s.ID)
			} else if r.rollbackOf == "" {
				r.rollbackOf = s.ID
			} else {
				r.rollbackOf += ", " + s.ID // the undo of either of two alternatives
			}
		}
	}
}

func (c *checker) ask(p string, s *Step) {
	if strings.TrimSpace(s.Question) == "" {
		c.bad(p, "add question: what to ask the responder", "ask step %q has no question", s.ID)
	}
	c.template(p+".question", s.Question)
	seen := map[string]bool{}
	for j, ch := range s.Choices {
		if strings.TrimSpace(ch) == "" || seen[ch] {
			c.bad(fmt.Sprintf("%s.choices[%d]", p, j), "list distinct, non-empty choices", "choice %q is empty or repeated", ch)
		}
		seen[ch] = true
	}
	if s.Default != "" && len(s.Choices) > 0 && !seen[s.Default] {
		c.bad(p+".default", "make the default one of the choices", "default %q is not a choice", s.Default)
	}
}

func (c *checker) enum(p, field, v string, allowed ...string) {
	if v != "" && !slices.Contains(allowed, v) {
		c.bad(p, "use "+strings.Join(allowed, " or "), "%s is %q", field, v)
	}
}

func kindNames() string {
	s := make([]string, len(lever.Kinds))
	for i, k := range lever.Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
