// Package testenv starts real servers (redis-server, prometheus) for tests,
// each on a free loopback port with its own data directory, and stops them
// when the test ends. It never touches a shared instance.
package testenv

import (
	"net"
	"os/exec"
	"testing"
)

// Need skips or fails the test when a server binary is missing: under CI
// (CI=true) a missing binary is a failure, since `make test` installs it.
func Need(t testing.TB, bins ...string) {
	t.Helper()
	for _, b := range bins {
		if _, err := exec.LookPath(b); err != nil {
			t.Fatalf("%s not on PATH: run `make deps` (apt-get install -y prometheus redis-server tmux chromium)", b)
		}
	}
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
