package deploy

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// repoRoot is the module root: this package's directory is deploy/.
const repoRoot = ".."

// toolsModuleBuilds builds a tools module's command into bin, or skips the
// test when the module cannot be built here (its dependencies not fetched
// and no module proxy reachable).
func toolsModuleBuilds(t *testing.T, module, pkg, bin string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = filepath.Join(repoRoot, "hack", module)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("tools module hack/%s does not build here: %v\n%s", module, err, out)
	}
}
