// Package testenv starts real servers (redis-server, prometheus) for tests,
// each on a free loopback port with its own data directory, and stops them
// when the test ends. It never touches a shared instance.
package testenv

import (
	"fmt"
	"net"
	"os/exec"
	"testing"
	"time"
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

// waitTCP waits until addr accepts connections or the process exits.
func waitTCP(addr string, exited <-chan struct{}, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("server exited before listening on %s", addr)
		default:
		}
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("nothing listening on %s after %s", addr, timeout)
}
