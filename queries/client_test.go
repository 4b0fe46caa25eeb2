package queries

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/exit"
)

func noEnv(string) string { return "" }

func TestNewClientUsageErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	notPEM := filepath.Join(dir, "ca.pem")
	for _, f := range []string{empty, notPEM} {
		if err := os.WriteFile(f, []byte("\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	u := "http://127.0.0.1:9090"
	for _, tc := range []struct {
		name string
		cfg  config.Prometheus
		want string
	}{
		{"no url", config.Prometheus{}, "--prometheus-url, set STORMCTL_PROMETHEUS_URL, or set prometheus.url"},
		{"bad scheme", config.Prometheus{URL: "127.0.0.1:9090"}, `prometheus.url "127.0.0.1:9090": want http(s)://`},
		{"missing ca", config.Prometheus{URL: u, TLS: config.TLS{CAFile: filepath.Join(dir, "nope")}}, "prometheus.tls.ca-file: open"},
		{"ca not pem", config.Prometheus{URL: u, TLS: config.TLS{CAFile: notPEM}}, "no PEM certificate"},
		{"cert without key", config.Prometheus{URL: u, TLS: config.TLS{CertFile: notPEM}}, "set both or neither"},
		{"token twice", config.Prometheus{URL: u, BearerTokenFile: empty, BearerTokenEnv: "T"}, "only one of bearer-token-file"},
		{"empty token file", config.Prometheus{URL: u, BearerTokenFile: empty}, "bearer-token-file: " + empty + " is empty"},
		{"unset token env", config.Prometheus{URL: u, BearerTokenEnv: "PROM_TOKEN"}, "PROM_TOKEN is empty or unset"},
		{"no password", config.Prometheus{URL: u, BasicAuth: &config.BasicAuth{Username: "u"}}, "set password-file or password-env"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewClient(tc.cfg, noEnv)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if exit.Code(err) != exit.Usage {
				t.Fatalf("exit code %d, want %d", exit.Code(err), exit.Usage)
			}
		})
	}
}

// TestClientSendsCredentialsAndHeaders checks what reaches the server for
// each way of authenticating, including a token file rotated between calls.
func TestClientSendsCredentialsAndHeaders(t *testing.T) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"success","data":{"resultType":"scalar","result":[1,"1"]}}`))
	}))
	defer srv.Close()
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte("tok-1\n"), 0o600)
	env := map[string]string{"TOK": "env-token", "PW": "pw"}
	getenv := func(k string) string { return env[k] }
	query := func(cfg config.Prometheus) http.Header {
		t.Helper()
		cfg.URL = srv.URL
		c, err := NewClient(cfg, getenv)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := c.Query(context.Background(), "1", time.Time{}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	h := query(config.Prometheus{BearerTokenFile: tokenFile, Headers: map[string]string{"X-Scope-OrgID": "tenant-a"}})
	if h.Get("Authorization") != "Bearer tok-1" || h.Get("X-Scope-OrgID") != "tenant-a" {
		t.Errorf("token file: headers %v", h)
	}
	os.WriteFile(tokenFile, []byte("tok-2"), 0o600)
	if h := query(config.Prometheus{BearerTokenFile: tokenFile}); h.Get("Authorization") != "Bearer tok-2" {
		t.Errorf("rotated token file: Authorization %q", h.Get("Authorization"))
	}
	if h := query(config.Prometheus{BearerTokenEnv: "TOK"}); h.Get("Authorization") != "Bearer env-token" {
		t.Errorf("token env: Authorization %q", h.Get("Authorization"))
	}
	h = query(config.Prometheus{BasicAuth: &config.BasicAuth{Username: "ops", PasswordEnv: "PW"}})
	if h.Get("Authorization") != "Basic b3BzOnB3" { // ops:pw
		t.Errorf("basic auth: Authorization %q", h.Get("Authorization"))
	}
}

// TestClientErrorLines checks the one-line errors for failures that need no
// real Prometheus to provoke.
func TestClientErrorLines(t *testing.T) {
	mux := http.NewServeMux()
	status := func(code int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			w.Write([]byte(body))
		}
	}
	mux.HandleFunc("/401/api/v1/query", status(401, "Unauthorized"))
	mux.HandleFunc("/403/api/v1/query", status(403, "no tenant"))
	mux.HandleFunc("/503/api/v1/query", status(503, `{"status":"error","errorType":"unavailable","error":"too many queries in flight"}`))
	mux.HandleFunc("/html/api/v1/query", status(200, "<html>login</html>"))
	mux.HandleFunc("/slow/api/v1/query", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // the server notices a closed connection only after the body
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, tc := range []struct {
		path    string
		timeout time.Duration
		want    string
		status  int
	}{
		{"/401", 0, "unauthorized (HTTP 401) (check the credentials: prometheus.bearer-token-file/-env or prometheus.basic-auth)", 401},
		{"/403", 0, "forbidden (HTTP 403) (check the credentials", 403},
		{"/503", 0, "unavailable (HTTP 503): too many queries in flight", 503},
		{"/html", 0, "unexpected response: ", 0},
		{"/slow", 100 * time.Millisecond, "timed out (the server is overloaded or unreachable", 0},
	} {
		t.Run(tc.path, func(t *testing.T) {
			c, err := NewClient(config.Prometheus{URL: srv.URL + tc.path, Timeout: config.Duration(tc.timeout)}, noEnv)
			if err != nil {
				t.Fatal(err)
			}
			_, _, _, err = c.Query(context.Background(), "up", time.Time{})
			assertServerError(t, err, srv.URL+tc.path, tc.want)
			var se *ServerError
			if errors.As(err, &se) && se.Status != tc.status {
				t.Errorf("status %d, want %d", se.Status, tc.status)
			}
		})
	}
}

// assertServerError checks that err is one line, a *ServerError exiting 1,
// and names the address and the cause.
func assertServerError(t *testing.T, err error, address, cause string) {
	t.Helper()
	var se *ServerError
	if !errors.As(err, &se) {
		t.Fatalf("err = %#v, want a *ServerError", err)
	}
	msg := err.Error()
	t.Log(msg)
	if strings.Contains(msg, "\n") || !strings.Contains(msg, address) || !strings.Contains(msg, cause) {
		t.Fatalf("error line %q\nwant one line naming %s and %q", msg, address, cause)
	}
	if exit.Code(err) != exit.Error {
		t.Fatalf("exit code %d, want 1", exit.Code(err))
	}
}

// FuzzAPICause: whatever a server sends back, the cause is one line and
// nothing panics.
func FuzzAPICause(f *testing.F) {
	f.Add("client_error", "client error: 401", "Unauthorized")
	f.Add("server_error", "server error: 503", `{"status":"error","error":"overloaded\nretry later"}`)
	f.Add("bad_data", "invalid parameter \"query\": 1:2: parse error", "")
	f.Add("client_error", "", "")
	f.Add("weird", "x y z 99999999999999999999", "<html>\n</html>")
	f.Fuzz(func(t *testing.T, typ, msg, detail string) {
		cause, hint, _ := apiCause(&v1.Error{Type: v1.ErrorType(typ), Msg: msg, Detail: detail})
		if strings.ContainsAny(cause+hint, "\n\r") {
			t.Fatalf("cause %q, hint %q: not one line", cause, hint)
		}
	})
}
