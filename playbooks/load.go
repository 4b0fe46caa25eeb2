package playbooks

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/internal/yamlfile"
	"github.com/stormctl/stormctl/queries"
)

var (
	nameRE  = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)
	paramRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)
)

// Parse decodes and validates one playbook file against the query
// catalogue. Every problem is reported, each as file:line:col with the fix;
// the error is a yamlfile.Errors.
func Parse(file string, data []byte, cat *queries.Catalog) (*Playbook, error) {
	pb := &Playbook{}
	if err := yamlfile.Decode(file, data, pb); err != nil {
		return nil, asErrors(file, err)
	}
	doc, err := yamlfile.Parse(file, data)
	if err != nil {
		return nil, asErrors(file, err)
	}
	sum := sha256.Sum256(data)
	pb.Source, pb.Version = file, hex.EncodeToString(sum[:6])
	c := &checker{doc: doc, pb: pb, cat: cat, params: map[string]bool{}, steps: map[string]int{}}
	c.playbook()
	if len(c.errs) > 0 {
		slices.SortStableFunc(c.errs, func(a, b *yamlfile.Error) int {
			if a.Line != b.Line {
				return a.Line - b.Line
			}
			return a.Col - b.Col
		})
		return nil, c.errs
	}
	return pb, nil
}

// asErrors turns a decoding error into the list every loader returns.
func asErrors(file string, err error) yamlfile.Errors {
	var es yamlfile.Errors
	if errors.As(err, &es) {
		return es
	}
	var e *yamlfile.Error
	if errors.As(err, &e) {
		if strings.Contains(e.Msg, "unknown field") && e.Fix == "" {
			e.Fix = "check the spelling against a built-in: `stormctl playbook show retry-amplification --source`"
		}
		return yamlfile.Errors{e}
	}
	return yamlfile.Errors{{File: file, Msg: err.Error()}}
}

// checker validates a decoded playbook and collects positioned errors.
type checker struct {
	doc    *yamlfile.Doc
	pb     *Playbook
	cat    *queries.Catalog
	errs   yamlfile.Errors
	params map[string]bool
	steps  map[string]int // step id → index of its first definition
}

// bad records an error at the node at path, or at its nearest ancestor
// that exists (a missing key has no position of its own).
func (c *checker) bad(path, fix, format string, args ...any) {
	e := c.doc.Errorf(path, fix, format, args...)
	for p := path; e.Line == 0 && strings.ContainsAny(p, ".["); {
		p = p[:strings.LastIndexAny(p, ".[")]
		e.Line, e.Col = c.doc.Pos(p)
	}
	if e.Line == 0 {
		e.Line, e.Col = 1, 1
	}
	c.errs = append(c.errs, e)
}

func (c *checker) playbook() {
	pb := c.pb
	if pb.APIVersion != APIVersion {
		c.bad("$.apiVersion", "write apiVersion: "+APIVersion, "apiVersion is %q", pb.APIVersion)
	}
	if pb.Kind != KindPlaybook {
		c.bad("$.kind", "write kind: "+KindPlaybook, "kind is %q", pb.Kind)
	}
	if !nameRE.MatchString(pb.Name) {
		c.bad("$.name", "use lower-case letters, digits and -, starting with a letter", "invalid playbook name %q", pb.Name)
	}
	if strings.TrimSpace(pb.Title) == "" {
		c.bad("$.title", "say in a line what incident this playbook answers", "a playbook needs a title")
	}
	for i, p := range pb.Parameters {
		c.parameter(fmt.Sprintf("$.parameters[%d]", i), p)
	}
	if len(pb.Steps) == 0 {
		c.bad("$.steps", "list the steps in order", "a playbook needs at least one step")
	}
	for i, s := range pb.Steps {
		p := fmt.Sprintf("$.steps[%d]", i)
		if s == nil {
			c.bad(p, "remove the empty list item", "empty step")
			pb.Steps[i] = &Step{}
			continue
		}
		if !nameRE.MatchString(s.ID) {
			c.bad(p+".id", "give every step an id of lower-case letters, digits and -", "invalid step id %q", s.ID)
		} else if j, dup := c.steps[s.ID]; dup {
			c.bad(p+".id", "rename one of them", "duplicate step id %q (also steps[%d])", s.ID, j)
		} else {
			c.steps[s.ID] = i
		}
	}
	for i, s := range pb.Steps {
		c.step(fmt.Sprintf("$.steps[%d]", i), i, s)
	}
}

func (c *checker) parameter(p string, prm Parameter) {
	switch {
	case !paramRE.MatchString(prm.Name):
		c.bad(p+".name", "use lower-case letters, digits and _, starting with a letter", "invalid parameter name %q", prm.Name)
	case c.params[prm.Name]:
		c.bad(p+".name", "remove or rename one of them", "duplicate parameter %q", prm.Name)
	default:
		c.params[prm.Name] = true
	}
	if prm.Required && prm.Default != "" {
		c.bad(p+".default", "drop the default or required: true", "parameter %q is required and has a default; it can be only one", prm.Name)
	}
	if prm.Pattern == "" {
		return
	}
	if _, err := regexp.Compile(prm.Pattern); err != nil {
		c.bad(p+".pattern", "write a Go regular expression (RE2 syntax)", "invalid pattern: %v", err)
		return
	}
	re, err := regexp.Compile(anchor(prm.Pattern))
	if err != nil {
		c.bad(p+".pattern", "write a pattern that matches on its own, without ^ or $", "invalid pattern: %v", err)
		return
	}
	if prm.Default != "" && !re.MatchString(prm.Default) {
		c.bad(p+".default", "make the default match the pattern", "default %q does not match pattern %q", prm.Default, prm.Pattern)
	}
}

// anchor makes a pattern match whole values only.
func anchor(pattern string) string { return `^(?:` + pattern + `)$` }

// template checks the templated field at path: only declared parameters.
func (c *checker) template(path, s string) {
	names, err := templateParams(s)
	if err != nil {
		c.bad(path, "write {{ .params.NAME }} with a declared parameter", "%v", err)
		return
	}
	for _, n := range names {
		if !c.params[n] {
			c.bad(path, fmt.Sprintf("declare it under parameters, or use one of: %s", strings.Join(c.paramNames(), ", ")),
				"undefined parameter %q", n)
		}
	}
}

// literal rejects template syntax in a field that takes none.
func (c *checker) literal(path, field, s string) bool {
	if isTemplate(s) {
		c.bad(path, "write the value itself; templates are allowed in params, target, value, reason, text and question", "templates are not allowed in %s", field)
		return false
	}
	return true
}

func (c *checker) paramNames() []string {
	var names []string
	for _, p := range c.pb.Parameters {
		if c.params[p.Name] && !slices.Contains(names, p.Name) {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		return []string{"(none declared)"}
	}
	return names
}

// ref checks that step field at path names an earlier step of one of the
// given types and returns it.
func (c *checker) ref(path, field, id string, at int, types ...StepType) *Step {
	j, ok := c.steps[id]
	if !ok {
		c.bad(path, "name the id of a step in this playbook: "+strings.Join(c.stepIDs(), ", "), "%s names unknown step %q", field, id)
		return nil
	}
	s := c.pb.Steps[j]
	if len(types) > 0 && !slices.Contains(types, s.Type) {
		c.bad(path, "name a "+joinTypes(types)+" step", "%s names step %q, a %s step", field, id, s.Type)
		return nil
	}
	if at >= 0 && j >= at {
		c.bad(path, "move the step it names before this one", "%s names step %q, which does not come before this step", field, id)
		return nil
	}
	return s
}

func (c *checker) stepIDs() []string {
	var ids []string
	for _, s := range c.pb.Steps {
		if _, ok := c.steps[s.ID]; ok && !slices.Contains(ids, s.ID) {
			ids = append(ids, s.ID)
		}
	}
	return ids
}

func joinTypes(ts []StepType) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, " or ")
}
