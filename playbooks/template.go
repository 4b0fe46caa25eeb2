package playbooks

import (
	"errors"
	"regexp"
	"strings"
)

// Templates in playbooks only insert parameters: {{ .params.NAME }}. No
// functions, conditionals or other data, so every template can be checked
// at load time against the declared parameters and rendering cannot fail.
var insertRE = regexp.MustCompile(`\{\{\s*\.params\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)

var errTemplate = errors.New("a template may only insert a parameter, as {{ .params.NAME }}")

// templateParams returns the parameters s inserts, in order.
func templateParams(s string) ([]string, error) {
	rest := insertRE.ReplaceAllString(s, "")
	if strings.Contains(rest, "{{") || strings.Contains(rest, "}}") {
		return nil, errTemplate
	}
	var names []string
	for _, m := range insertRE.FindAllStringSubmatch(s, -1) {
		names = append(names, m[1])
	}
	return names, nil
}

// isTemplate reports whether s has any template syntax at all.
func isTemplate(s string) bool { return strings.Contains(s, "{{") || strings.Contains(s, "}}") }

// render inserts parameter values; the loader has checked every name.
func render(s string, params map[string]string) string {
	if !strings.Contains(s, "{{") {
		return s
	}
	return insertRE.ReplaceAllStringFunc(s, func(m string) string {
		return params[insertRE.FindStringSubmatch(m)[1]]
	})
}

// Placeholders shows a templated field with each insertion as <NAME>, for
// describing a playbook before its parameters are known.
func Placeholders(s string) string { return insertRE.ReplaceAllString(s, "<$1>") }

// StepText is the text of step id with the run's parameters inserted, ""
// for a step without text (the dashboard shows a note step's text).
func (r *Run) StepText(id string) string {
	s := r.pb.Step(id)
	if s == nil {
		return ""
	}
	return render(s.Text, r.params)
}
