package promapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

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
