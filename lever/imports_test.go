package lever_test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/stormctl/stormctl/"

// goList runs go list with a template over packages of this module.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Fields(string(out))
}

// TestDataPlaneImportsLightly: a Go service that links the data plane
// (flags/, resilience/) links the lever schema, not the control plane's
// writer, the journal, config, guards, queries, the CLI or the dashboard.
func TestDataPlaneImportsLightly(t *testing.T) {
	forbidden := []string{
		module + "journal", module + "internal/config", module + "actions", module + "queries",
		module + "controlplane", module + "playbooks", module + "tui",
		"github.com/spf13/cobra", "github.com/charmbracelet/bubbletea",
	}
	deps := goList(t, "-deps", module+"flags", module+"resilience")
	if len(deps) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
	for _, d := range deps {
		for _, f := range forbidden {
			if d == f || strings.HasPrefix(d, f+"/") {
				t.Errorf("flags/resilience depend on %s", d)
			}
		}
	}
}

// TestLeverIsALeaf: the schema imports nothing of stormctl.
func TestLeverIsALeaf(t *testing.T) {
	for _, d := range goList(t, "-deps", module+"lever") {
		if strings.HasPrefix(d, module) && d != module+"lever" {
			t.Errorf("lever depends on %s", d)
		}
	}
}

// TestReadersUseTheSchemaNotTheWriter: the dashboard and the playbooks name
// kinds and levers through lever and change them only through actions.
func TestReadersUseTheSchemaNotTheWriter(t *testing.T) {
	lines := goList(t, "-f", "{{.ImportPath}}:{{range .Imports}}{{.}},{{end}}", module+"tui/...", module+"playbooks", module+"flags", module+"resilience")
	for _, l := range lines {
		pkg, imports, _ := strings.Cut(l, ":")
		for _, imp := range strings.Split(imports, ",") {
			if imp == module+"controlplane" {
				t.Errorf("%s imports %s", pkg, imp)
			}
		}
	}
}
