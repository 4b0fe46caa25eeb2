package deploy

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
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

// cachedTool returns the path of a tools module's `tool` command as the go
// command caches it (`go tool -n`): minutes to build the first time, about
// a second afterwards. It skips the test when the module cannot be built here.
func cachedTool(t *testing.T, module, name string) string {
	t.Helper()
	cmd := exec.Command("go", "tool", "-n", name)
	cmd.Dir = filepath.Join(repoRoot, "hack", module)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("tools module hack/%s does not build here: %v\n%s", module, err, stderr.Bytes())
	}
	return strings.TrimSpace(string(out))
}
