// Package kubeenv starts a real kube-apiserver and etcd for tests, through
// controller-runtime's envtest, once per test binary. The binaries come
// from TEST_ASSET_KUBE_APISERVER and TEST_ASSET_ETCD, or from what
// scripts/kube-assets.sh built and recorded in hack/kube/assets.env; tests
// skip, saying how to get them, only when neither is there.
package kubeenv

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Env is the running control plane.
type Env struct {
	*envtest.Environment
	Config *rest.Config

	mu        sync.Mutex
	restarted []func() // stops API servers StopAPIServer started again
}

var (
	mu      sync.Mutex
	started *Env
	failed  error
	skipMsg string
)

// Start returns the package's control plane, starting it on first use with
// the CRDs in crdPaths installed (later calls' paths must be the same).
func Start(t testing.TB, crdPaths ...string) *Env {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if started == nil && failed == nil && skipMsg == "" {
		started, skipMsg, failed = start(crdPaths)
	}
	if skipMsg != "" {
		t.Skip(skipMsg)
	}
	if failed != nil {
		t.Fatalf("start kube-apiserver and etcd: %v", failed)
	}
	return started
}

// StartOwned starts a control plane of the test's own, stopped when the
// test ends, for packages whose TestMain cannot call Main.
func StartOwned(t testing.TB, crdPaths ...string) *Env {
	t.Helper()
	env, msg, err := start(crdPaths)
	if msg != "" {
		t.Skip(msg)
	}
	if err != nil {
		t.Fatalf("start kube-apiserver and etcd: %v", err)
	}
	t.Cleanup(func() {
		env.mu.Lock()
		for _, stop := range env.restarted {
			stop()
		}
		env.mu.Unlock()
		if err := env.Stop(); err != nil {
			t.Errorf("stop kube-apiserver and etcd: %v", err)
		}
	})
	return env
}

// Main runs the tests and stops the control plane afterwards; call it from
// TestMain.
func Main(m *testing.M) int {
	code := m.Run()
	mu.Lock()
	defer mu.Unlock()
	if started != nil {
		if err := started.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "kubeenv: stop:", err)
		}
	}
	return code
}

func start(crdPaths []string) (*Env, string, error) {
	apiserver, etcd, msg, err := Assets()
	if msg != "" || err != nil {
		return nil, msg, err
	}
	_ = os.Setenv("TEST_ASSET_KUBE_APISERVER", apiserver)
	_ = os.Setenv("TEST_ASSET_ETCD", etcd)
	env := &envtest.Environment{CRDDirectoryPaths: crdPaths, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		return nil, "", fmt.Errorf("%w (kube-apiserver %s, etcd %s)", err, apiserver, etcd)
	}
	// Tests make many quick requests; the default client limits (5 qps)
	// would measure the limiter, not the actuator.
	cfg.QPS, cfg.Burst = 500, 1000
	return &Env{Environment: env, Config: cfg}, "", nil
}

// Assets finds the kube-apiserver and etcd binaries. msg is set (and the
// caller should skip) when they were never built here.
func Assets() (apiserver, etcd, msg string, err error) {
	apiserver, etcd = os.Getenv("TEST_ASSET_KUBE_APISERVER"), os.Getenv("TEST_ASSET_ETCD")
	if apiserver != "" && etcd != "" {
		return apiserver, etcd, "", nil
	}
	root, ok := repoRoot()
	if !ok {
		return "", "", "kube-apiserver: TEST_ASSET_KUBE_APISERVER and TEST_ASSET_ETCD are unset and hack/kube was not found", nil
	}
	recorded := filepath.Join(root, "hack", "kube", "assets.env")
	data, rerr := os.ReadFile(recorded)
	if rerr != nil {
		return "", "", "kube-apiserver not built: run scripts/kube-assets.sh (make test does) or set TEST_ASSET_KUBE_APISERVER and TEST_ASSET_ETCD", nil
	}
	vals := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			vals[k] = v
		}
	}
	if apiserver == "" {
		apiserver = vals["TEST_ASSET_KUBE_APISERVER"]
	}
	if etcd == "" {
		etcd = vals["TEST_ASSET_ETCD"]
	}
	if _, serr := os.Stat(apiserver); apiserver == "" || serr != nil {
		// The build cache was trimmed since the script ran: build again.
		out, berr := rebuild(root)
		if berr != nil {
			return "", "", "", fmt.Errorf("%s names %q, which is gone, and rebuilding failed: %v", recorded, apiserver, berr)
		}
		apiserver = out
	}
	if _, serr := os.Stat(etcd); etcd == "" || serr != nil {
		return "", "", "", fmt.Errorf("%s names etcd %q, which is not there: run scripts/kube-assets.sh again", recorded, etcd)
	}
	return apiserver, etcd, "", nil
}

func rebuild(root string) (string, error) {
	cmd := exec.Command("go", "-C", filepath.Join(root, "hack", "kube"), "tool", "-n", "kube-apiserver")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// repoRoot walks up from the working directory to the directory holding
// hack/kube/go.mod.
func repoRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "kube", "go.mod")); err == nil {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// Poll calls cond every 100 ms until it holds or within has passed, and
// returns cond's last message: tests wait on the API server this way
// instead of asserting at an instant.
func Poll(within time.Duration, cond func() (bool, string)) (ok bool, last string) {
	deadline := time.Now().Add(within)
	for {
		if ok, last = cond(); ok || time.Now().After(deadline) {
			return ok, last
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// apiserverPID finds the process of this Env's kube-apiserver by the
// secure port on its command line (envtest does not expose the process).
func (e *Env) apiserverPID() (int, []string, error) {
	port := e.ControlPlane.APIServer.SecureServing.Port
	if port == "" {
		return 0, nil, fmt.Errorf("kube-apiserver secure port unknown")
	}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, nil, err
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if filepath.Base(args[0]) == filepath.Base(e.ControlPlane.APIServer.Path) && slices.Contains(args, "--secure-port="+port) {
			return pid, args, nil
		}
	}
	return 0, nil, fmt.Errorf("no kube-apiserver process with --secure-port=%s", port)
}

// StopAPIServer kills this Env's kube-apiserver (etcd and its data stay) and
// returns a function that starts it again with the same command line — same
// port, certificates and etcd — and waits until it is ready; the Env stops
// it with the rest. Clients see connections refused in between, as in a
// control-plane outage. Use it with StartOwned, never on the shared Env
// other tests use.
func (e *Env) StopAPIServer(t testing.TB) (restart func()) {
	t.Helper()
	pid, args, err := e.apiserverPID()
	if err != nil {
		t.Fatal(err)
	}
	environ, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if err != nil {
		t.Fatal(err)
	}
	proc, _ := os.FindProcess(pid)
	if err := proc.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill kube-apiserver %d: %v", pid, err)
	}
	if ok, _ := Poll(10*time.Second, func() (bool, string) { return e.get("/readyz") != nil, "" }); !ok {
		t.Fatal("kube-apiserver still answers after SIGKILL")
	}
	return func() {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = strings.Split(strings.TrimRight(string(environ), "\x00"), "\x00")
		if err := cmd.Start(); err != nil {
			t.Fatalf("restart kube-apiserver: %v", err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		e.mu.Lock()
		e.restarted = append(e.restarted, func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		})
		e.mu.Unlock()
		if ok, last := Poll(60*time.Second, func() (bool, string) {
			err := e.get("/readyz")
			return err == nil, fmt.Sprint(err)
		}); !ok {
			t.Fatalf("restarted kube-apiserver not ready: %s", last)
		}
	}
}

// HangAPIServer stops this Env's kube-apiserver with SIGSTOP: its sockets
// stay open and accept connections, but nothing answers, as when the
// server is wedged or its node is partitioned. The returned function
// resumes it (SIGCONT) and waits until it is ready; the test's cleanup
// resumes it too, so the Env can stop. Use it with StartOwned.
func (e *Env) HangAPIServer(t testing.TB) (resume func()) {
	t.Helper()
	pid, _, err := e.apiserverPID()
	if err != nil {
		t.Fatal(err)
	}
	proc, _ := os.FindProcess(pid)
	if err := proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("stop kube-apiserver %d: %v", pid, err)
	}
	var once sync.Once
	cont := func() { once.Do(func() { _ = proc.Signal(syscall.SIGCONT) }) }
	t.Cleanup(cont)
	if ok, _ := Poll(10*time.Second, func() (bool, string) { return e.get("/readyz") != nil, "" }); !ok {
		t.Fatal("kube-apiserver still answers after SIGSTOP")
	}
	return func() {
		t.Helper()
		cont()
		if ok, last := Poll(60*time.Second, func() (bool, string) {
			err := e.get("/readyz")
			return err == nil, fmt.Sprint(err)
		}); !ok {
			t.Fatalf("resumed kube-apiserver not ready: %s", last)
		}
	}
}

// get requests path from the API server as the admin user.
func (e *Env) get(path string) error {
	hc, err := rest.HTTPClientFor(e.Config)
	if err != nil {
		return err
	}
	hc.Timeout = 2 * time.Second
	defer hc.CloseIdleConnections()
	u, _, err := rest.DefaultServerUrlFor(e.Config)
	if err != nil {
		return err
	}
	resp, err := hc.Get(u.JoinPath(path).String())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", path, resp.Status)
	}
	return nil
}
