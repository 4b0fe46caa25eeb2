package playbooks

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/yamlfile"
	"github.com/stormctl/stormctl/queries"
)

//go:embed builtin/*.yaml
var builtinFS embed.FS

// Set is the playbooks a responder can run: the built-ins, overridden by
// name by the user's.
type Set struct {
	list []*Playbook
}

// Load returns the built-in playbooks plus every *.yaml and *.yml file in
// dirs (in the order given, files by name). A user playbook with the name
// of a built-in or of an earlier file replaces it. All problems in all
// files are reported together, each with file:line:col, as a usage error
// (exit 2).
func Load(cat *queries.Catalog, dirs ...string) (*Set, error) {
	set := &Set{}
	var errs yamlfile.Errors
	add := func(file string, data []byte, builtin bool) {
		pb, err := Parse(file, data, cat)
		if err != nil {
			errs = append(errs, asErrors(file, err)...)
			return
		}
		pb.Builtin = builtin
		set.add(pb)
	}
	entries, err := fs.ReadDir(builtinFS, "builtin")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		data, err := builtinFS.ReadFile(path.Join("builtin", e.Name()))
		if err != nil {
			return nil, err
		}
		add("builtin:"+e.Name(), data, true)
	}
	for _, dir := range dirs {
		files, err := yamlFiles(dir)
		if err != nil {
			errs = append(errs, &yamlfile.Error{File: dir, Msg: err.Error(), Fix: "check --playbooks and playbooks-dirs in the config"})
			continue
		}
		for _, f := range files {
			data, err := yamlfile.ReadFile(f, yamlfile.DefaultLimits())
			if err != nil {
				errs = append(errs, &yamlfile.Error{File: f, Msg: err.Error()})
				continue
			}
			add(f, data, false)
		}
	}
	if len(errs) > 0 {
		return nil, exit.NewUsage(errs)
	}
	return set, nil
}

func (s *Set) add(pb *Playbook) {
	i := slices.IndexFunc(s.list, func(o *Playbook) bool { return o.Name == pb.Name })
	if i < 0 {
		s.list = append(s.list, pb)
		return
	}
	pb.Overrides = s.list[i].Source
	s.list[i] = pb
}

func yamlFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && (strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) {
			out = append(out, filepath.Join(dir, n))
		}
	}
	return out, nil
}

// List returns every playbook: built-ins in file order, then the user's.
func (s *Set) List() []*Playbook { return slices.Clone(s.list) }

// Get returns the playbook with this name, or a *NotFoundError (exit 2).
func (s *Set) Get(name string) (*Playbook, error) {
	names := make([]string, len(s.list))
	for i, pb := range s.list {
		if pb.Name == name {
			return pb, nil
		}
		names[i] = pb.Name
	}
	return nil, &NotFoundError{Name: name, Suggestions: closest(name, names)}
}

// NotFoundError is an unknown playbook name. It exits 2.
type NotFoundError struct {
	Name        string
	Suggestions []string
}

func (e *NotFoundError) Error() string {
	msg := fmt.Sprintf("unknown playbook %q", e.Name)
	if len(e.Suggestions) > 0 {
		msg += " (did you mean " + strings.Join(e.Suggestions, " or ") + "?)"
	}
	return msg + "; `stormctl playbook list` shows every playbook"
}

// ExitCode implements exit.Coder.
func (e *NotFoundError) ExitCode() int { return exit.Usage }

// closest returns the names that share a word with s, or contain it.
func closest(s string, names []string) []string {
	var out []string
	words := strings.FieldsFunc(s, func(r rune) bool { return r == '-' || r == '_' })
	for _, n := range names {
		if len(out) == 3 {
			break
		}
		if len(s) >= 3 && strings.Contains(n, s) || slices.ContainsFunc(words, func(w string) bool { return len(w) >= 4 && strings.Contains(n, w) }) {
			out = append(out, n)
		}
	}
	return out
}

// Raw returns the playbook's file as written.
func (p *Playbook) Raw() ([]byte, error) {
	if name, ok := strings.CutPrefix(p.Source, "builtin:"); ok && p.Builtin {
		return builtinFS.ReadFile(path.Join("builtin", name))
	}
	return yamlfile.ReadFile(p.Source, yamlfile.DefaultLimits())
}

// ParseFile reads and validates one playbook file, as `playbook validate` does.
func ParseFile(file string, cat *queries.Catalog) (*Playbook, error) {
	data, err := yamlfile.ReadFile(file, yamlfile.DefaultLimits())
	if err != nil {
		if ye, ok := err.(*yamlfile.Error); ok {
			return nil, yamlfile.Errors{ye}
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, yamlfile.Errors{{File: file, Msg: err.Error()}}
	}
	return Parse(file, data, cat)
}
