package promapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/common/route"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/promql/parser"
	v1 "github.com/prometheus/prometheus/web/api/v1"
)

// Version is what /api/v1/status/buildinfo reports: the Prometheus release
// whose engine and API the lab embeds (module v0.316.0 is Prometheus 3.16.0).
var Version = v1.PrometheusVersion{
	Version:   "3.16.0",
	Revision:  "stormctl-lab",
	Branch:    "stormctl-lab",
	BuildUser: "stormctl",
	BuildDate: "",
	GoVersion: runtime.Version(),
}

// routed lists the API paths served; the others need a scrape manager, rule
// manager or exemplar storage the lab does not have.
var routed = regexp.MustCompile(`^/api/v1/(query|query_range|series|labels|label/[^/]+/values|status/buildinfo|format_query|parse_query)$`)

// Handler serves /api/v1/... over d with Prometheus's own handlers.
func (d *DB) Handler() http.Handler {
	api := v1.NewAPI(
		d.Engine, d.TSDB, nil, nil,
		nil, nil, nil,
		func() config.Config { return config.DefaultConfig },
		map[string]string{},
		v1.GlobalURLOptions{ListenAddress: "127.0.0.1", Host: "127.0.0.1", Scheme: "http"},
		func(f http.HandlerFunc) http.HandlerFunc { return f },
		nil, d.dir, false, false, 0, d.logger, nil,
		0, 1, 0,
		false, nil,
		func() (v1.RuntimeInfo, error) { return v1.RuntimeInfo{}, errors.New("not available in the lab") },
		&Version,
		nil, nil, nil, nil, nil,
		false, nil, false, false, false,
		5*time.Minute, false, false, nil, nil,
		v1.OpenAPIOptions{IncludePaths: []string{"/query", "/series", "/labels", "/label", "/status/buildinfo"}},
		parser.NewParser(parser.Options{}), false, 0,
	)
	r := route.New()
	api.Register(r.WithPrefix("/api/v1"))
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !routed.MatchString(req.URL.Path) {
			http.NotFound(w, req)
			return
		}
		r.ServeHTTP(w, req)
	})
}

// Server is an HTTP server on a loopback address.
type Server struct {
	Addr string // host:port actually bound
	URL  string // http://Addr
	srv  *http.Server
	done chan error
}

// Serve listens on addr, which must be a loopback address ("127.0.0.1:0"
// picks a free port), and serves h until Close.
func Serve(addr string, h http.Handler) (*Server, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("lab serve %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("lab serve %q: only loopback addresses are served (127.0.0.1, ::1, localhost)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("lab serve: %w", err)
	}
	s := &Server{
		Addr: ln.Addr().String(),
		srv:  &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second},
		done: make(chan error, 1),
	}
	s.URL = "http://" + s.Addr
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server, letting requests in flight finish for up to 2s.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if serr := <-s.done; err == nil && !errors.Is(serr, http.ErrServerClosed) {
		err = serr
	}
	return err
}

// Mux serves the API under /api/v1/, metrics (if non-nil) at /metrics, and
// the readiness endpoints a Prometheus client may probe.
func Mux(api, metrics http.Handler) http.Handler {
	m := http.NewServeMux()
	m.Handle("/api/v1/", api)
	if metrics != nil {
		m.Handle("/metrics", metrics)
	}
	ok := func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "ready") {
			fmt.Fprintln(w, "Prometheus Server is Ready.")
			return
		}
		fmt.Fprintln(w, "Prometheus Server is Healthy.")
	}
	m.HandleFunc("/-/ready", ok)
	m.HandleFunc("/-/healthy", ok)
	return m
}
