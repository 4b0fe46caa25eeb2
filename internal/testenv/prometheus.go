package testenv

import (
	"bytes"
	"fmt"
	"maps"
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
)

// PromOptions configure a test Prometheus.
type PromOptions struct {
	// OpenMetrics is backfilled with `promtool tsdb create-blocks-from
	// openmetrics` into the data directory before the server starts.
	OpenMetrics string
	// Blocks is a directory of TSDB blocks (RuleBlocks makes one) moved
	// into the data directory before the server starts.
	Blocks string
	// WebConfig is the content of --web.config.file (TLS, basic auth); ""
	// for none. WebConfig builds one.
	WebConfig string
	// ExtraConfig is appended to the generated prometheus.yml, e.g. a
	// remote_read section. The generated file has only a global section and
	// no scrape jobs, so the backfilled data is all the server holds.
	ExtraConfig string
}

// Prometheus is a running prometheus owned by one test.
type Prometheus struct {
	URL  string // http://127.0.0.1:port, or https:// when WebConfig serves TLS
	Addr string // 127.0.0.1:port
	Dir  string // holds prometheus.yml, web.yml, data.om and data/

	cmd  *exec.Cmd
	done chan struct{}
	log  *syncBuffer
}

// StartPrometheus starts prometheus on a free loopback port with its own
// data directory, after backfilling opts.OpenMetrics, and waits until it is
// ready (/-/ready). It is stopped when the test ends.
//
// Backfilled samples near time.Now() are queryable at once: the server
// scrapes nothing, so the persisted blocks never overlap a head block
// (Prometheus 2.42 would merge overlaps anyway), and an instant query at
// "now" sees the newest sample of a series if it lies within the 5m
// lookback. Caveats: a series whose last sample is older than 5m is absent
// from instant queries (that is how PromQL treats stale series, and it is
// how tests provoke "no data"); retention is set to 10 years, counted from
// the newest block, so old fixed-date data is kept too.
func StartPrometheus(t testing.TB, opts PromOptions) *Prometheus {
	t.Helper()
	Need(t, "prometheus", "promtool")
	p := &Prometheus{Dir: t.TempDir()}
	data := filepath.Join(p.Dir, "data")
	if opts.OpenMetrics != "" {
		backfill(t, p.Dir, opts.OpenMetrics, data)
	}
	if opts.Blocks != "" {
		moveBlocks(t, opts.Blocks, data)
	}
	config := "global:\n  scrape_interval: 15s\n  evaluation_interval: 15s\n" + opts.ExtraConfig
	write(t, filepath.Join(p.Dir, "prometheus.yml"), config)
	args := []string{
		"--config.file=" + filepath.Join(p.Dir, "prometheus.yml"),
		"--storage.tsdb.path=" + data,
		"--storage.tsdb.retention.time=3650d",
		"--log.level=info",
	}
	scheme := "http"
	if opts.WebConfig != "" {
		write(t, filepath.Join(p.Dir, "web.yml"), opts.WebConfig)
		args = append(args, "--web.config.file="+filepath.Join(p.Dir, "web.yml"))
		if strings.Contains(opts.WebConfig, "tls_server_config") {
			scheme = "https"
		}
	}
	// Another process may take the free port before prometheus binds it.
	for attempt := 0; ; attempt++ {
		p.Addr = "127.0.0.1:" + strconv.Itoa(FreePort(t))
		err := p.start(append(args, "--web.listen-address="+p.Addr), opts.WebConfig == "")
		if err == nil {
			break
		}
		if attempt < 2 && strings.Contains(p.log.String(), "address already in use") {
			continue
		}
		t.Fatalf("prometheus: %v\n%s", err, p.log.String())
	}
	p.URL = scheme + "://" + p.Addr
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("prometheus log (%s):\n%s", p.Addr, lastLines(p.log.String(), 30))
		}
	})
	return p
}

// WebConfig renders a --web.config.file. With certs it serves TLS with the
// server certificate and, when requireClientCert, demands a client
// certificate signed by the same CA. users maps user names to bcrypt hashes
// for basic auth.
func WebConfig(certs *Certs, requireClientCert bool, users map[string]string) string {
	var b strings.Builder
	if certs != nil {
		fmt.Fprintf(&b, "tls_server_config:\n  cert_file: %q\n  key_file: %q\n", certs.ServerCert, certs.ServerKey)
		if requireClientCert {
			fmt.Fprintf(&b, "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: %q\n", certs.CAFile)
		}
	}
	if len(users) > 0 {
		b.WriteString("basic_auth_users:\n")
		for _, u := range slices.Sorted(maps.Keys(users)) {
			fmt.Fprintf(&b, "  %q: %q\n", u, users[u])
		}
	}
	return b.String()
}

// Stop terminates the server; the port then refuses connections.
func (p *Prometheus) Stop() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	p.cmd = nil
}

func backfill(t testing.TB, dir, om, data string) {
	t.Helper()
	src := filepath.Join(dir, "data.om")
	write(t, src, om)
	out, err := exec.Command("promtool", "tsdb", "create-blocks-from", "openmetrics", src, data).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool backfill of %s: %v\n%s", src, err, lastLines(string(out), 20))
	}
}

// start runs prometheus and waits until it is ready: the log line Prometheus
// writes right after it flips /-/ready to 200, which works whatever the web
// config demands; without a web config /-/ready itself is checked too.
func (p *Prometheus) start(args []string, plain bool) error {
	p.log = &syncBuffer{}
	p.cmd = exec.Command("prometheus", args...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		return err
	}
	p.done = make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) { _ = c.Wait(); close(done) }(p.cmd, p.done)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			p.cmd = nil
			return fmt.Errorf("exited before it was ready on %s", p.Addr)
		case <-time.After(25 * time.Millisecond):
		}
		if !strings.Contains(p.log.String(), "Server is ready to receive web requests") {
			continue
		}
		if !plain || readyOK("http://"+p.Addr+"/-/ready") {
			return nil
		}
	}
	p.Stop()
	return fmt.Errorf("not ready on %s after 30s", p.Addr)
}

func readyOK(url string) bool {
	resp, err := http.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// syncBuffer is a bytes.Buffer the server's output goroutines and the test
// can use at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
