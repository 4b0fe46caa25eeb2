package playbooks

import (
	"strings"
	"testing"

	"github.com/stormctl/stormctl/queries"
)

func catalog(t testing.TB) *queries.Catalog {
	t.Helper()
	cat, err := queries.Load()
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func TestBuiltinsLoad(t *testing.T) {
	set, err := Load(catalog(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, pb := range set.List() {
		names = append(names, pb.Name)
	}
	t.Log(names)
}

// TestBuiltinsPointToPolicyAnalyze: every incident playbook's guidance
// names the command that predicts the next storm from configuration.
func TestBuiltinsPointToPolicyAnalyze(t *testing.T) {
	set, err := Load(catalog(t))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, pb := range set.List() {
		if !pb.Builtin || pb.Name == "staged-recovery" {
			continue
		}
		n++
		found := false
		for _, st := range pb.Steps {
			found = found || st.Type == Note && strings.Contains(st.Text, "stormctl policy analyze")
		}
		if !found {
			t.Errorf("%s: no note step names stormctl policy analyze", pb.Name)
		}
	}
	if n != 5 {
		t.Errorf("%d incident playbooks, want DOMAIN.md's 5", n)
	}
}
