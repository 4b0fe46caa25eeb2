package testenv

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Alertmanager is a running Debian prometheus-alertmanager owned by one
// test: its own config and data directory, a free loopback port, no
// cluster listener.
type Alertmanager struct {
	URL  string // http://127.0.0.1:port
	Addr string
	Dir  string

	cmd  *exec.Cmd
	done chan struct{}
	log  *syncBuffer
}

// AlertmanagerBin is the Debian package's binary name.
const AlertmanagerBin = "prometheus-alertmanager"

// StartAlertmanager starts Alertmanager with config (alertmanager.yml's
// content) and waits until /-/ready answers. It is stopped when the test
// ends, and its log is shown if the test failed.
func StartAlertmanager(t testing.TB, config string) *Alertmanager {
	t.Helper()
	Need(t, AlertmanagerBin)
	a := &Alertmanager{Dir: t.TempDir()}
	write(t, filepath.Join(a.Dir, "alertmanager.yml"), config)
	for attempt := 0; ; attempt++ {
		a.Addr = "127.0.0.1:" + strconv.Itoa(FreePort(t))
		err := a.start()
		if err == nil {
			break
		}
		if attempt < 2 && strings.Contains(a.log.String(), "address already in use") {
			continue
		}
		t.Fatalf("alertmanager: %v\n%s", err, a.log.String())
	}
	a.URL = "http://" + a.Addr
	t.Cleanup(func() {
		a.Stop()
		if t.Failed() {
			t.Logf("alertmanager log (%s):\n%s", a.Addr, lastLines(a.log.String(), 30))
		}
	})
	return a
}

func (a *Alertmanager) start() error {
	a.log = &syncBuffer{}
	a.cmd = exec.Command(AlertmanagerBin,
		"--config.file="+filepath.Join(a.Dir, "alertmanager.yml"),
		"--storage.path="+filepath.Join(a.Dir, "data"),
		"--web.listen-address="+a.Addr,
		"--cluster.listen-address=", // no gossip: one test, one instance
		"--log.level=info")
	a.cmd.Stdout, a.cmd.Stderr = a.log, a.log
	if err := a.cmd.Start(); err != nil {
		return err
	}
	a.done = make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) { _ = c.Wait(); close(done) }(a.cmd, a.done)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-a.done:
			a.cmd = nil
			return fmt.Errorf("exited before it was ready on %s", a.Addr)
		case <-time.After(25 * time.Millisecond):
		}
		if readyOK("http://" + a.Addr + "/-/ready") {
			return nil
		}
	}
	a.Stop()
	return fmt.Errorf("not ready on %s after 30s", a.Addr)
}

// Stop terminates the server.
func (a *Alertmanager) Stop() {
	if a.cmd == nil || a.cmd.Process == nil {
		return
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(10 * time.Second):
		_ = a.cmd.Process.Kill()
		<-a.done
	}
	a.cmd = nil
}
