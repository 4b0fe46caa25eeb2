package queries

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"golang.org/x/crypto/bcrypt"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
)

// TestClientAgainstSecuredPrometheus connects through TLS with a client
// certificate and basic auth to a real prometheus, then checks the error
// line for each piece that is wrong or missing.
func TestClientAgainstSecuredPrometheus(t *testing.T) {
	certs, otherCA := testenv.NewCerts(t), testenv.NewCerts(t)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	users := map[string]string{"ops": string(hash)}
	mtls := testenv.StartPrometheus(t, testenv.PromOptions{WebConfig: testenv.WebConfig(certs, true, users)})
	tlsOnly := testenv.StartPrometheus(t, testenv.PromOptions{WebConfig: testenv.WebConfig(certs, false, nil)})

	good := config.Prometheus{
		URL:       mtls.URL,
		BasicAuth: &config.BasicAuth{Username: "ops", PasswordEnv: "PROM_PW"},
		TLS:       config.TLS{CAFile: certs.CAFile, CertFile: certs.ClientCert, KeyFile: certs.ClientKey},
		Timeout:   config.Duration(5 * time.Second),
	}
	env := func(pw string) func(string) string {
		return func(k string) string {
			if k == "PROM_PW" {
				return pw
			}
			return ""
		}
	}
	query := func(cfg config.Prometheus, pw string) error {
		t.Helper()
		c, err := NewClient(cfg, env(pw))
		if err != nil {
			t.Fatal(err)
		}
		v, _, _, err := c.Query(context.Background(), "vector(42)", time.Time{})
		if vec, ok := v.(model.Vector); err == nil && (!ok || len(vec) != 1 || vec[0].Value != 42) {
			t.Fatalf("vector(42) = %v", v)
		}
		return err
	}
	if err := query(good, "s3cret"); err != nil {
		t.Fatalf("good config: %v", err)
	}

	wrongCA := good
	wrongCA.TLS.CAFile = otherCA.CAFile
	assertServerError(t, query(wrongCA, "s3cret"), mtls.URL, "TLS certificate not trusted (signed by an unknown authority) (set prometheus.tls.ca-file")

	noCert := good
	noCert.TLS.CertFile, noCert.TLS.KeyFile = "", ""
	assertServerError(t, query(noCert, "s3cret"), mtls.URL, "the server requires a client certificate (set prometheus.tls.cert-file")

	foreignCert := good
	foreignCert.TLS.CertFile, foreignCert.TLS.KeyFile = otherCA.ClientCert, otherCA.ClientKey
	assertServerError(t, query(foreignCert, "s3cret"), mtls.URL, "the server rejected the client certificate")

	assertServerError(t, query(good, "wrong"), mtls.URL, "unauthorized (HTTP 401)")

	byName := config.Prometheus{URL: "https://localhost:" + port(t, tlsOnly.Addr), TLS: config.TLS{CAFile: certs.CAFile}}
	if err := query(byName, ""); err != nil {
		t.Errorf("https://localhost with the CA: %v", err)
	}
	wrongName := byName
	wrongName.TLS.ServerName = "prometheus.example"
	assertServerError(t, query(wrongName, ""), byName.URL, "TLS certificate is not valid for prometheus.example")

	plain := config.Prometheus{URL: "http://" + tlsOnly.Addr}
	assertServerError(t, query(plain, ""), plain.URL, "the server speaks HTTPS (use https://")

	// The password never shows in the address an error names.
	c, err := NewClient(config.Prometheus{URL: "https://ops:s3cret@" + tlsOnly.Addr}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, err = c.Query(context.Background(), "1", time.Time{})
	assertServerError(t, err, "https://ops:xxxxx@"+tlsOnly.Addr, "not trusted")
}

func TestClientPlainPrometheusErrors(t *testing.T) {
	p := testenv.StartPrometheus(t, testenv.PromOptions{})
	c, err := NewClient(config.Prometheus{URL: p.URL}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, err = c.Query(context.Background(), "sum(rate(x[5m]) by (le)", time.Time{})
	assertServerError(t, err, p.URL, "bad PromQL: ")

	prefixed, err := NewClient(config.Prometheus{URL: p.URL + "/prometheus"}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, err = prefixed.Query(context.Background(), "up", time.Time{})
	assertServerError(t, err, p.URL+"/prometheus", "not found (HTTP 404) (check the path prefix in prometheus.url")

	p.Stop()
	_, _, _, err = c.Query(context.Background(), "up", time.Time{})
	assertServerError(t, err, p.URL, "connection refused (is Prometheus listening at this address?)")
}

func TestClassifyDNS(t *testing.T) {
	err := &net.OpError{Op: "dial", Err: &net.DNSError{Name: "prom.invalid", Err: "no such host", IsNotFound: true}}
	cause, hint, _ := classify(err, false, false)
	if cause != `cannot resolve host "prom.invalid": no such host` || hint != "check the host in prometheus.url" {
		t.Fatalf("cause %q, hint %q", cause, hint)
	}
}

func port(t *testing.T, addr string) string {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
