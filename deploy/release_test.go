package deploy

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGoReleaserCheck validates .goreleaser.yaml with the GoReleaser the
// tools module hack/release pins (the same one `make release-snapshot` runs).
// It skips only when that module cannot be built here.
func TestGoReleaserCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("builds GoReleaser")
	}
	bin, _ := filepath.Abs(filepath.Join(t.TempDir(), "goreleaser"))
	toolsModuleBuilds(t, "release", "github.com/goreleaser/goreleaser/v2", bin)
	cmd := exec.Command(bin, "check")
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("goreleaser check: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "1 configuration file(s) validated") {
		t.Errorf("goreleaser check said:\n%s", out)
	}
}
