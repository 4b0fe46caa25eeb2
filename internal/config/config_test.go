package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const sample = `current-context: prod
contexts:
  prod:
    prometheus:
      url: https://prom.example:9090
      headers: {X-Scope-OrgID: tenant-a}
      timeout: 5s
      basic-auth: {username: ops, password-env: PROM_PW}
    redis: {url: "rediss://redis.example:6380", namespace: prod}
    actor: alice
    services:
      checkout: {pack: envoy}
  lab:
    prometheus: {url: "http://127.0.0.1:9999"}
`

func write(t *testing.T, s string) string {
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestResolvePrecedence(t *testing.T) {
	f, err := Load(write(t, sample))
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.Resolve(Overrides{}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if r.Name != "prod" || r.Prometheus.URL != "https://prom.example:9090" || r.Actor != "alice" ||
		time.Duration(r.Prometheus.Timeout) != 5*time.Second || r.Services["checkout"].Pack != "envoy" ||
		r.Prometheus.Headers["X-Scope-OrgID"] != "tenant-a" || r.Prometheus.BasicAuth.PasswordEnv != "PROM_PW" {
		t.Fatalf("current context: %+v", r)
	}
	r, _ = f.Resolve(Overrides{}, env(map[string]string{EnvContext: "lab", EnvActor: "bob"}))
	if r.Name != "lab" || r.Prometheus.URL != "http://127.0.0.1:9999" || r.Actor != "bob" {
		t.Fatalf("env context: %+v", r)
	}
	r, _ = f.Resolve(Overrides{Context: "lab", PrometheusURL: "http://flag:1"},
		env(map[string]string{EnvContext: "prod", EnvPrometheus: "http://env:1"}))
	if r.Name != "lab" || r.Prometheus.URL != "http://flag:1" {
		t.Fatalf("flags must win: %+v", r)
	}
	if _, err := f.Resolve(Overrides{Context: "staging"}, env(nil)); err == nil || !strings.Contains(err.Error(), `context "staging"`) {
		t.Fatalf("unknown context: %v", err)
	}
}

func TestLoadErrorsNamePosition(t *testing.T) {
	_, err := Load(write(t, "contexts:\n  prod:\n    prometheus:\n      urll: x\n"))
	if err == nil || !strings.Contains(err.Error(), "config.yaml:4:7") {
		t.Fatalf("want file:4:7, got %v", err)
	}
	f, err := Load(filepath.Join(t.TempDir(), "missing.yaml"))
	if err != nil || len(f.Contexts) != 0 {
		t.Fatalf("missing file must be empty config: %v", err)
	}
}

func TestResolveExpandsHome(t *testing.T) {
	f, err := Load(write(t, "contexts:\n  c:\n    queries-dirs: [~/q, /abs]\n    prometheus: {tls: {ca-file: ~/ca.pem}}\ncurrent-context: c\n"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.Resolve(Overrides{}, env(map[string]string{"HOME": "/home/alice"}))
	if err != nil {
		t.Fatal(err)
	}
	if r.QueriesDirs[0] != "/home/alice/q" || r.QueriesDirs[1] != "/abs" || r.Prometheus.TLS.CAFile != "/home/alice/ca.pem" {
		t.Fatalf("not expanded: %v %q", r.QueriesDirs, r.Prometheus.TLS.CAFile)
	}
	if f.Contexts["c"].QueriesDirs[0] != "~/q" {
		t.Fatal("Resolve changed the loaded file")
	}
}

// Whatever a config file holds, loading it never panics and its errors
// speak YAML with a position, never Go type names.
func FuzzLoadConfig(f *testing.F) {
	f.Add("contexts:\n  a:\n    prometheus: {timeout: 5 minutes}\n")
	f.Add("contexts:\n  a:\n    policy: {blast-radius: [1], max-ttl: {retries: {a: 1}}}\n")
	f.Add("contexts: [a]\n")
	f.Add("contexts:\n  a:\n    actor: {x: 1}\n    inventory: {from-prometheus: 3}\n")
	f.Fuzz(func(t *testing.T, data string) {
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		if err == nil {
			return
		}
		msg := strings.ReplaceAll(err.Error(), path, "")
		for _, leak := range []string{"Go struct", "Go value", "interface {}", "config.Context", "config.Duration"} {
			if strings.Contains(msg, leak) {
				t.Fatalf("error leaks %q: %s", leak, msg)
			}
		}
	})
}
