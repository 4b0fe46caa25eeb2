package main

import (
	"github.com/stormctl/stormctl/playbooks"
)

// Playbooks loads the built-in playbooks, then the context's playbooks-dirs
// and the given directories (later ones override earlier ones by name).
func (f *Factory) Playbooks(dirs []string) (*playbooks.Set, error) {
	cat, err := f.Catalog()
	if err != nil {
		return nil, err
	}
	cfg, err := f.Config()
	if err != nil {
		return nil, err
	}
	return playbooks.Load(cat, append(append([]string(nil), cfg.PlaybooksDirs...), dirs...)...)
}

// Playbook loads the playbooks and returns the one named.
func (f *Factory) Playbook(dirs []string, name string) (*playbooks.Playbook, error) {
	set, err := f.Playbooks(dirs)
	if err != nil {
		return nil, err
	}
	return set.Get(name)
}
