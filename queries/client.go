package queries

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/exit"
)

// DefaultHTTPTimeout bounds one HTTP request when prometheus.timeout is not
// set. The runner applies its own, usually shorter, per-query timeout.
const DefaultHTTPTimeout = 30 * time.Second

// Client is a connection to one Prometheus-compatible HTTP API (Prometheus,
// Thanos, Mimir, VictoriaMetrics). Use API for any v1 call and Err to turn
// its errors into one-line *ServerError; Query and QueryRange do both.
type Client struct {
	API     v1.API
	Address string // the URL, with any password redacted
	Limits  Limits // the caps on one answer

	pacer      *pacer
	budget     atomic.Pointer[Budget] // shared by the answers in flight; nil: none
	clientCert bool                   // a TLS client certificate is configured
	certAsked  atomic.Bool            // the server asked for a client certificate
}

// NewClient builds a client from a context's prometheus section. Secrets
// named by environment variable are read with getenv. A missing URL or an
// unreadable credential or certificate is a usage error.
func NewClient(cfg config.Prometheus, getenv func(string) string) (*Client, error) {
	if cfg.URL == "" {
		return nil, exit.NewUsage(fmt.Errorf("no Prometheus URL: pass --prometheus-url, set %s, or set prometheus.url in the context", config.EnvPrometheus))
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, exit.NewUsage(fmt.Errorf("prometheus.url %q: want http(s)://host[:port][/path-prefix]", cfg.URL))
	}
	c := &Client{Address: u.Redacted(), clientCert: cfg.TLS.CertFile != ""}
	tlsCfg, err := tlsConfig(cfg.TLS, &c.certAsked)
	if err != nil {
		return nil, exit.NewUsage(err)
	}
	auth, err := newAuth(cfg, getenv)
	if err != nil {
		return nil, exit.NewUsage(err)
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.TLSClientConfig = tlsCfg
	auth.next = base
	timeout := time.Duration(cfg.Timeout)
	if timeout <= 0 {
		timeout = DefaultHTTPTimeout
	}
	c.Limits = LimitsOf(cfg.Limits)
	c.pacer = &pacer{next: &limitTransport{next: auth, limits: c.Limits, address: c.Address, budget: &c.budget}, now: time.Now}
	ac, err := api.NewClient(api.Config{Address: cfg.URL, Client: &http.Client{Transport: c.pacer, Timeout: timeout}})
	if err != nil {
		return nil, exit.NewUsage(fmt.Errorf("prometheus.url %q: %w", cfg.URL, err))
	}
	c.API = v1.NewAPI(ac)
	return c, nil
}

// Query runs an instant query at t (zero: the server's now).
func (c *Client) Query(ctx context.Context, expr string, t time.Time, opts ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	v, w, i, err := c.API.Query(ctx, expr, t, opts...)
	return v, w, i, c.Err("query", err)
}

// QueryRange runs a range query.
func (c *Client) QueryRange(ctx context.Context, expr string, r v1.Range, opts ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	v, w, i, err := c.API.QueryRange(ctx, expr, r, opts...)
	return v, w, i, c.Err("query_range", err)
}

// PausedUntil is the time before which the server asked, with a 429 or 503
// and Retry-After, not to be sent anything; zero when it did not.
func (c *Client) PausedUntil() time.Time {
	return c.pacer.until()
}

// tlsConfig loads the CA and client certificate named in the config, and
// records in asked whether a server requested a client certificate, to tell
// "certificate required" from other handshake failures.
func tlsConfig(t config.TLS, asked *atomic.Bool) (*tls.Config, error) {
	cfg, err := t.Load("prometheus.tls")
	if err != nil {
		return nil, err
	}
	cert := &tls.Certificate{} // none: the handshake goes on without one
	if len(cfg.Certificates) > 0 {
		cert = &cfg.Certificates[0]
		cfg.Certificates = nil
	}
	cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		asked.Store(true)
		return cert, nil
	}
	return cfg, nil
}

// authTransport adds the configured headers and credentials to every
// request. A bearer token file is read on every request, so a rotated token
// (a Kubernetes projected token, say) is picked up without a restart.
type authTransport struct {
	next      http.RoundTripper
	headers   map[string]string
	token     func() (string, error)
	user, pwd string
	basic     bool
}

func newAuth(cfg config.Prometheus, getenv func(string) string) (*authTransport, error) {
	a := &authTransport{headers: cfg.Headers}
	switch {
	case cfg.BearerTokenFile != "" && cfg.BearerTokenEnv != "":
		return nil, errors.New("prometheus: set only one of bearer-token-file and bearer-token-env")
	case cfg.BearerTokenFile != "":
		a.token = func() (string, error) { return readSecret("prometheus.bearer-token-file", cfg.BearerTokenFile) }
	case cfg.BearerTokenEnv != "":
		tok, err := envSecret("prometheus.bearer-token-env", cfg.BearerTokenEnv, getenv)
		if err != nil {
			return nil, err
		}
		a.token = func() (string, error) { return tok, nil }
	}
	if a.token != nil {
		if _, err := a.token(); err != nil {
			return nil, err
		}
	}
	if b := cfg.BasicAuth; b != nil {
		if a.token != nil {
			return nil, errors.New("prometheus: set either a bearer token or basic-auth, not both")
		}
		var err error
		switch {
		case b.PasswordFile != "" && b.PasswordEnv != "":
			return nil, errors.New("prometheus.basic-auth: set only one of password-file and password-env")
		case b.PasswordFile != "":
			a.pwd, err = readSecret("prometheus.basic-auth.password-file", b.PasswordFile)
		case b.PasswordEnv != "":
			a.pwd, err = envSecret("prometheus.basic-auth.password-env", b.PasswordEnv, getenv)
		default:
			err = errors.New("prometheus.basic-auth: set password-file or password-env")
		}
		if err != nil {
			return nil, err
		}
		a.user, a.basic = b.Username, true
	}
	return a, nil
}

func readSecret(key, path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%s: %s is empty", key, path)
	}
	return s, nil
}

func envSecret(key, name string, getenv func(string) string) (string, error) {
	if v := getenv(name); v != "" {
		return v, nil
	}
	return "", fmt.Errorf("%s: environment variable %s is empty or unset", key, name)
}

func (a *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	for k, v := range a.headers {
		if strings.EqualFold(k, "Host") {
			r.Host = v
			continue
		}
		r.Header.Set(k, v)
	}
	switch {
	case a.token != nil:
		tok, err := a.token()
		if err != nil {
			return nil, err
		}
		r.Header.Set("Authorization", "Bearer "+tok)
	case a.basic:
		r.SetBasicAuth(a.user, a.pwd)
	}
	return a.next.RoundTrip(r)
}
