package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// RedisOptions configure a test redis-server.
type RedisOptions struct {
	// Persist turns on the append-only file with fsync on every write, so a
	// SIGKILL loses nothing that was acknowledged.
	Persist bool
	// ACL lines (as `ACL SETUSER` arguments, one user per line, without the
	// command name) loaded from an ACL file; "default" may be redefined.
	ACL []string
	// TLS serves rediss:// only, with the given PEM files.
	TLS *TLSFiles
	// ReplicaOf makes the server a replica of this host:port.
	ReplicaOf string
}

// TLSFiles are PEM file paths for a TLS server.
type TLSFiles struct {
	CA, Cert, Key string
}

// Redis is a running redis-server owned by one test.
type Redis struct {
	Addr string // host:port
	Dir  string // its data directory
	opts RedisOptions
	port int
	t    testing.TB
	cmd  *exec.Cmd
	done chan struct{}
	log  *syncBuffer
}

// StartRedis starts a redis-server on a free loopback port; it is stopped
// when the test ends.
func StartRedis(t testing.TB, opts RedisOptions) *Redis {
	t.Helper()
	Need(t, "redis-server")
	r := &Redis{Dir: t.TempDir(), opts: opts, port: FreePort(t), t: t}
	r.Addr = "127.0.0.1:" + strconv.Itoa(r.port)
	r.start()
	t.Cleanup(r.Stop)
	return r
}

// URL is the redis:// (or rediss://) URL of the server, with user and
// password when given.
func (r *Redis) URL(user, password string) string {
	scheme := "redis"
	if r.opts.TLS != nil {
		scheme = "rediss"
	}
	auth := ""
	if user != "" || password != "" {
		auth = user + ":" + password + "@"
	}
	return fmt.Sprintf("%s://%s%s", scheme, auth, r.Addr)
}

func (r *Redis) args() []string {
	a := []string{"--bind", "127.0.0.1", "--dir", r.Dir, "--save", "", "--daemonize", "no",
		"--protected-mode", "no", "--loglevel", "notice"}
	if r.opts.Persist {
		a = append(a, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		a = append(a, "--appendonly", "no")
	}
	if host, port, ok := strings.Cut(r.opts.ReplicaOf, ":"); ok {
		a = append(a, "--replicaof", host, port)
	}
	if len(r.opts.ACL) > 0 {
		aclFile := filepath.Join(r.Dir, "users.acl")
		var b strings.Builder
		for _, l := range r.opts.ACL {
			b.WriteString("user " + l + "\n")
		}
		if err := os.WriteFile(aclFile, []byte(b.String()), 0o600); err != nil {
			r.t.Fatal(err)
		}
		a = append(a, "--aclfile", aclFile)
	}
	if r.opts.TLS != nil {
		a = append(a, "--port", "0", "--tls-port", strconv.Itoa(r.port),
			"--tls-ca-cert-file", r.opts.TLS.CA, "--tls-cert-file", r.opts.TLS.Cert,
			"--tls-key-file", r.opts.TLS.Key, "--tls-auth-clients", "optional")
	} else {
		a = append(a, "--port", strconv.Itoa(r.port))
	}
	return a
}

// start runs redis-server and waits until it is ready: it listens before
// it has loaded its data (and answers -LOADING meanwhile), so readiness is
// the log line it writes once loaded, whatever auth or TLS it demands.
func (r *Redis) start() {
	r.t.Helper()
	r.log = &syncBuffer{}
	r.cmd = exec.Command("redis-server", r.args()...)
	r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
	if err := r.cmd.Start(); err != nil {
		r.t.Fatalf("start redis-server: %v", err)
	}
	r.done = make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) { _ = c.Wait(); close(done) }(r.cmd, r.done)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(r.log.String(), "Ready to accept connections") {
		select {
		case <-r.done:
			r.t.Fatalf("redis-server exited before it was ready on %s\n%s", r.Addr, r.log.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("redis-server not ready on %s after 10s\n%s", r.Addr, r.log.String())
		}
	}
}

// Kill sends SIGKILL and waits for the process to die: a crash, not a shutdown.
func (r *Redis) Kill() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.done
	r.cmd = nil
}

// Pause stops the process (SIGSTOP) without closing its connections: a
// replica that falls behind, a primary that hangs. Resume continues it.
func (r *Redis) Pause() { _ = r.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (r *Redis) Resume() { _ = r.cmd.Process.Signal(syscall.SIGCONT) }

// Restart starts the server again on the same port and data directory.
func (r *Redis) Restart() {
	r.t.Helper()
	r.Kill()
	r.start()
}

// Stop terminates the server.
func (r *Redis) Stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
		r.Kill()
	}
	r.cmd = nil
}
