// Package playbooks turns runbooks into YAML whose steps check a saved
// query, pull a lever through the actions guards, wait for recovery, show
// guidance or ask the responder a question. It holds the schema, a loader
// that reports every problem as file:line:col with the fix, the built-in
// playbooks (one per incident shape of DOMAIN.md, plus staged recovery), and
// a runner that executes a playbook step by step, resumably, on the record.
package playbooks

import (
	"time"
)

// APIVersion and KindPlaybook head every playbook file.
const (
	APIVersion   = "stormctl/v1"
	KindPlaybook = "Playbook"
)

// StepType is what a step does.
type StepType string

// Step types.
const (
	Check  StepType = "check"  // evaluate a saved query against an expectation; records the evidence
	Action StepType = "action" // pull (or release) a lever through the guards of actions/
	Wait   StepType = "wait"   // poll a saved query until an expectation holds, within a bound
	Note   StepType = "note"   // guidance to read
	Ask    StepType = "ask"    // a question whose answer is journaled
)

// StepTypes lists every step type.
var StepTypes = []StepType{Check, Action, Wait, Note, Ask}

// Playbook is one loaded, validated playbook.
type Playbook struct {
	APIVersion string      `yaml:"apiVersion" json:"api_version"`
	Kind       string      `yaml:"kind" json:"kind"`
	Name       string      `yaml:"name" json:"name"`
	Title      string      `yaml:"title" json:"title"`
	Summary    string      `yaml:"summary" json:"summary,omitempty"`
	Parameters []Parameter `yaml:"parameters" json:"parameters"`
	Steps      []*Step     `yaml:"steps" json:"steps"`

	// Source is where the playbook was loaded from: a file path, or
	// "builtin:NAME.yaml".
	Source string `yaml:"-" json:"source"`
	// Version is a hash of the file's bytes; the journal records it with
	// every step, so a timeline says which text of the playbook ran.
	Version string `yaml:"-" json:"version"`
	// Builtin is true for the embedded playbooks.
	Builtin bool `yaml:"-" json:"builtin"`
	// Overrides is the source of the playbook this one replaced by name.
	Overrides string `yaml:"-" json:"overrides,omitempty"`
}

// Parameter is a value the responder supplies with --param NAME=VALUE.
type Parameter struct {
	Name        string `yaml:"name" json:"name"`
	Description string `yaml:"description" json:"description,omitempty"`
	Required    bool   `yaml:"required" json:"required"`
	Default     string `yaml:"default" json:"default,omitempty"`
	// Pattern is a regular expression the whole value must match.
	Pattern string `yaml:"pattern" json:"pattern,omitempty"`
}

// Step is one step. Which fields apply depends on Type; the loader rejects
// fields that do not apply.
type Step struct {
	ID    string   `yaml:"id" json:"id"`
	Type  StepType `yaml:"type" json:"type"`
	Title string   `yaml:"title" json:"title,omitempty"`

	// check and wait
	Query string `yaml:"query" json:"query,omitempty"`
	// Params are the query's parameters: service, dependency, pool, window
	// and pack; values may insert {{ .params.NAME }}.
	Params map[string]string `yaml:"params" json:"params,omitempty"`
	Expect string            `yaml:"expect" json:"expect,omitempty"`
	// For makes the expectation hold throughout a window ending now;
	// Within makes it hold at some moment in one (a signal that flaps,
	// like breakers opening and closing, is caught between samples).
	For    Duration `yaml:"for" json:"for,omitempty"`
	Within Duration `yaml:"within" json:"within,omitempty"`
	// Match is "all" (default: every series meets the expectation) or "any".
	Match string `yaml:"match" json:"match,omitempty"`
	// NoData is "fail" (default) or "pass": whether a query without series
	// meets the expectation (e.g. no throttled retries at all).
	NoData string `yaml:"no_data" json:"no_data,omitempty"`
	// OnFail is "stop" (default) or "continue" (check only).
	OnFail string `yaml:"on_fail" json:"on_fail,omitempty"`

	// wait
	Timeout Duration `yaml:"timeout" json:"timeout,omitempty"`
	Every   Duration `yaml:"every" json:"every,omitempty"`

	// action
	Op        string   `yaml:"op" json:"op,omitempty"` // apply (default) or release
	Kind      string   `yaml:"kind" json:"kind,omitempty"`
	Target    string   `yaml:"target" json:"target,omitempty"`
	Value     string   `yaml:"value" json:"value,omitempty"`
	TTL       Duration `yaml:"ttl" json:"ttl,omitempty"`
	Reason    string   `yaml:"reason" json:"reason,omitempty"`
	Requires  []string `yaml:"requires" json:"requires,omitempty"`
	Supersede bool     `yaml:"supersede" json:"supersede,omitempty"`
	Force     bool     `yaml:"force" json:"force,omitempty"`

	// note
	Text string `yaml:"text" json:"text,omitempty"`

	// ask
	Question string   `yaml:"question" json:"question,omitempty"`
	Choices  []string `yaml:"choices" json:"choices,omitempty"`
	Default  string   `yaml:"default" json:"default,omitempty"`

	// any step
	When     *When  `yaml:"when" json:"when,omitempty"`
	Rollback string `yaml:"rollback" json:"rollback,omitempty"`

	expect Expectation
	// rollbackOf is set on steps named by other steps' rollback (their ids,
	// comma-separated): they undo those steps and run only when selected
	// explicitly.
	rollbackOf string
}

// When makes a step conditional on the outcome of an earlier step: a check
// or wait that passed or failed, or any step that was skipped (the "else"
// of a conditional step; when this run has not decided that step and no
// earlier run skipped it, its condition measured now says whether it would
// be); or on an optional parameter being given, as a degraded mode the
// service has.
type When struct {
	Passed  string `yaml:"passed" json:"passed,omitempty"`
	Failed  string `yaml:"failed" json:"failed,omitempty"`
	Skipped string `yaml:"skipped" json:"skipped,omitempty"`
	Param   string `yaml:"param" json:"param,omitempty"`
}

// String says the condition as a responder reads it.
func (w *When) String() string {
	if w.Param != "" {
		return "only if parameter " + w.Param + " is given"
	}
	id, want := w.condition()
	return "only if " + id + " " + string(want)
}

// condition is the step the condition names and the status it asks for;
// "" for a parameter's.
func (w *When) condition() (string, Status) {
	switch {
	case w.Passed != "":
		return w.Passed, Passed
	case w.Failed != "":
		return w.Failed, Failed
	}
	return w.Skipped, Skipped
}

// Op values of an action step.
const (
	OpApply   = "apply"
	OpRelease = "release"
)

// Expectation returns the parsed expectation of a check or wait step.
func (s *Step) Expectation() Expectation { return s.expect }

// RollbackOf names the steps this step undoes ("a, b"), "" if none.
func (s *Step) RollbackOf() string { return s.rollbackOf }

// Step returns the step with this id, or nil.
func (p *Playbook) Step(id string) *Step {
	for _, s := range p.Steps {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// Duration is a time.Duration written as "30s" or "5m" in YAML and JSON.
type Duration time.Duration

// badDuration marks a value that is not a duration. Decoding keeps going
// so that the loader can report it at its position, with the others.
const badDuration Duration = -1

// UnmarshalText parses a Go duration string; a malformed or negative one
// becomes badDuration.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil || v < 0 {
		v = time.Duration(badDuration)
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes the Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// D is the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }
