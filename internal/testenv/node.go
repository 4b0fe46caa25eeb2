package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// NodeApp installs the Node application in src (package.json and a
// committed package-lock.json, plus its scripts) with `npm ci` into a cache
// directory keyed by the lock file's hash, so the exact pinned versions are
// installed once per machine, and returns that directory with src's other
// files copied in. It skips the test, saying why, when node or npm is
// missing (scripts/install-test-deps.sh installs them).
func NodeApp(t testing.TB, src string) string {
	t.Helper()
	for _, bin := range []string{"node", "npm"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed (scripts/install-test-deps.sh installs Debian's nodejs npm): skipping the Node client", bin)
		}
	}
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatalf("the Node app needs a committed package-lock.json: %v", err)
	}
	sum := sha256.Sum256(lock)
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "stormctl-test", "node-"+hex.EncodeToString(sum[:8]))
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	done := filepath.Join(dir, "node_modules", ".stormctl-installed")
	if _, err := os.Stat(done); err == nil {
		return dir
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
