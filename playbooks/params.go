package playbooks

import (
	"fmt"
	"regexp"
	"strings"
)

// ParseParams reads --param NAME=VALUE flags.
func ParseParams(kvs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, &ParamError{Msg: fmt.Sprintf("--param %q: want NAME=VALUE", kv)}
		}
		if _, dup := out[k]; dup {
			return nil, &ParamError{Msg: fmt.Sprintf("--param %s given twice", k)}
		}
		out[k] = v
	}
	return out, nil
}

// Resolve checks the given values against the playbook's parameters and
// fills in defaults: unknown names, missing required values and values
// that do not match a pattern are errors (exit 2), all reported at once.
func (p *Playbook) Resolve(given map[string]string) (map[string]string, error) {
	out := map[string]string{}
	var problems []string
	declared := map[string]bool{}
	for _, prm := range p.Parameters {
		declared[prm.Name] = true
		v, ok := given[prm.Name]
		switch {
		case !ok && prm.Required:
			problems = append(problems, fmt.Sprintf("--param %s=... is required (%s)", prm.Name, prm.Description))
			continue
		case !ok:
			v = prm.Default
		}
		if prm.Pattern != "" && (ok || v != "") {
			re, err := regexp.Compile(anchor(prm.Pattern))
			if err != nil || !re.MatchString(v) {
				problems = append(problems, fmt.Sprintf("--param %s=%q does not match %s", prm.Name, v, prm.Pattern))
			}
		}
		out[prm.Name] = v
	}
	for _, k := range sortedKeys(given) {
		if !declared[k] {
			problems = append(problems, fmt.Sprintf("playbook %s has no parameter %q (it has: %s)", p.Name, k, p.paramList()))
		}
	}
	if len(problems) > 0 {
		return nil, &ParamError{Msg: strings.Join(problems, "; ")}
	}
	return out, nil
}

func (p *Playbook) paramList() string {
	if len(p.Parameters) == 0 {
		return "none"
	}
	names := make([]string, len(p.Parameters))
	for i, prm := range p.Parameters {
		names[i] = prm.Name
	}
	return strings.Join(names, ", ")
}
