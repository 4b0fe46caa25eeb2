package flagd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/flags"
)

// Default listen addresses: flagd's own default ports, on loopback only;
// a pod serving other pods passes ":8015" and so on (docs/flagd.md).
const (
	DefaultEvalAddr       = "127.0.0.1:8013"
	DefaultManagementAddr = "127.0.0.1:8014"
	DefaultSyncAddr       = "127.0.0.1:8015"
	DefaultOFREPAddr      = "127.0.0.1:8016"
	DefaultMaxStreams     = 10000
	DefaultStaleAfter     = 5 * time.Second
	keepAliveEvery        = 20 * time.Second
	safetyRefresh         = 2 * time.Second
)

// Options configure a Server.
type Options struct {
	Redis     redis.UniversalClient
	Namespace string
	// Listen addresses; "" uses flagd's default port.
	SyncAddr, EvalAddr, OFREPAddr, ManagementAddr string
	// TLSCert and TLSKey enable TLS on every listener; ClientCA requires and
	// verifies client certificates (mTLS).
	TLSCert, TLSKey, ClientCA string
	// StaleAfter is how long Redis may be lost before /readyz fails and
	// fail-safe values are served.
	StaleAfter time.Duration
	// FailSafe maps flag keys to the value served while Redis is lost.
	FailSafe map[string]any
	// MaxStreams bounds the open streams (sync and event streams).
	MaxStreams int
	// WriteTimeout bounds one write to a client (DefaultWriteTimeout).
	WriteTimeout time.Duration
	// ReadTimeout bounds reading a request's headers on every listener,
	// and its whole body on OFREP and management (DefaultReadTimeout).
	ReadTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long
	// (DefaultIdleTimeout).
	IdleTimeout time.Duration
	// MaxConns caps open connections on each of sync, evaluation and OFREP
	// (DefaultMaxConns); management has its own cap. Clients past it wait
	// in the kernel's accept queue.
	MaxConns int
	// InstanceID names the server's own reader in acknowledgements.
	InstanceID string
	Log        *slog.Logger
	// Loss, if set, says whether the control plane's journal went back (a
	// failover lost acknowledged writes): "" when not, else what is missing.
	// /readyz carries it as detail and /metrics as
	// stormctl_controlplane_journal_lost.
	Loss func() string
}

// Server is a running flagd-protocol server.
type Server struct {
	opts      Options
	hub       *Hub
	validator *Validator
	provider  *flags.Provider
	eval      *evalState
	metrics   *metrics
	stale     atomic.Bool
	acksDue   chan struct{}

	listeners map[string]net.Listener
	servers   []*http.Server
	ctx       context.Context // ends at Shutdown
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

// Start listens on every address, then follows the levers in Redis in the
// background: clients may connect before the first snapshot and wait for it.
func Start(opts Options) (*Server, error) {
	if opts.Redis == nil {
		return nil, errors.New("flagd serve: no Redis client")
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = DefaultStaleAfter
	}
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = DefaultMaxStreams
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = DefaultReadTimeout
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns()
	}
	v, err := NewValidator()
	if err != nil {
		return nil, err
	}
	ev, err := newEvalState()
	if err != nil {
		return nil, err
	}
	popts := []flags.Option{flags.Namespace(opts.Namespace), flags.StaleAfter(opts.StaleAfter),
		flags.ErrorAfter(2 * opts.StaleAfter), flags.InstanceID(opts.InstanceID), flags.Logger(opts.Log)}
	for k, x := range opts.FailSafe {
		popts = append(popts, flags.FailSafe(k, x))
	}
	s := &Server{opts: opts, hub: NewHub(opts.MaxStreams), validator: v, eval: ev,
		provider: flags.NewProvider(opts.Redis, popts...), listeners: map[string]net.Listener{}, acksDue: make(chan struct{}, 1)}
	s.metrics = newMetrics(s)
	tlsCfg, err := s.tlsConfig()
	if err != nil {
		return nil, err
	}
	handlers := map[string]http.Handler{
		"sync":       s.syncHandler(),
		"eval":       s.evalHandler(),
		"ofrep":      s.ofrepHandler(),
		"management": s.managementHandler(),
	}
	addrs := map[string]string{"sync": or(opts.SyncAddr, DefaultSyncAddr), "eval": or(opts.EvalAddr, DefaultEvalAddr),
		"ofrep": or(opts.OFREPAddr, DefaultOFREPAddr), "management": or(opts.ManagementAddr, DefaultManagementAddr)}
	for name, addr := range addrs {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			s.closeListeners()
			return nil, fmt.Errorf("flagd serve: listen for %s on %s: %w", name, addr, err)
		}
		s.listeners[name] = ln
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.ctx, s.cancel = ctx, cancel
	for name, raw := range s.listeners {
		srv, ln := s.listenerServer(ctx, name, raw, handlers[name])
		srv.TLSConfig = tlsCfg.Clone()
		s.servers = append(s.servers, srv)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			var err error
			if tlsCfg != nil {
				err = srv.ServeTLS(ln, "", "")
			} else {
				err = srv.Serve(ln)
			}
			if err != nil && !errors.Is(err, http.ErrServerClosed) {
				opts.Log.Error("flagd serve: listener stopped", "listener", name, "err", err)
			}
		}()
	}
	s.wg.Add(2)
	go s.follow(ctx)
	go s.acknowledge(ctx)
	return s, nil
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Addr is the address a listener ("sync", "eval", "ofrep", "management")
// is bound to.
func (s *Server) Addr(name string) string {
	if ln, ok := s.listeners[name]; ok {
		return ln.Addr().String()
	}
	return ""
}

// Hub is the server's snapshot hub.
func (s *Server) Hub() *Hub { return s.hub }

func (s *Server) closeListeners() {
	for _, ln := range s.listeners {
		_ = ln.Close()
	}
}

// Shutdown stops accepting, ends the streams (clients reconnect to another
// replica), waits for requests in flight until ctx ends, and withdraws the
// server's acknowledgements.
func (s *Server) Shutdown(ctx context.Context) error {
	s.cancel() // ends every stream: their contexts derive from it
	var errs []error
	for _, srv := range s.servers {
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, err)
			_ = srv.Close()
		}
	}
	s.wg.Wait()
	if err := s.provider.ShutdownWithContext(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// follow keeps the snapshot current (Follow).
func (s *Server) follow(ctx context.Context) {
	defer s.wg.Done()
	Follow(ctx, s.provider, s.opts.FailSafe, safetyRefresh, s.refresh)
}

// refresh publishes the lever state if it changed.
func (s *Server) refresh(in Input) {
	s.stale.Store(in.Stale)
	s.metrics.redisUp(!in.Stale)
	snap, err := s.hub.Publish(in, s.validator, time.Now(), func(snap *Snapshot) error {
		raw, err := snap.Config(Selector{})
		if err != nil {
			return err
		}
		return s.eval.load(raw)
	})
	if err != nil {
		s.metrics.rejected.Inc()
		s.opts.Log.Error("flagd serve: snapshot not sent: clients keep the previous one", "err", err)
		return
	}
	if snap != nil {
		s.metrics.published(snap)
	}
}

// errShuttingDown ends a stream at shutdown with an error status, not OK:
// @openfeature/flagd-provider 0.16.1's in-process sync reconnects only
// after an error, and would stay on a stream that ended cleanly forever.
var errShuttingDown = connect.NewError(connect.CodeUnavailable, errors.New("stormctl flagd serve is shutting down; reconnect"))

// streamEnded is what a stream returns when its context ends.
func (s *Server) streamEnded() error {
	if s.ctx.Err() != nil {
		return errShuttingDown
	}
	return nil // the client went away
}

// Ready says whether the server serves a current snapshot.
func (s *Server) Ready() (bool, string) {
	switch {
	case s.hub.Current() == nil:
		return false, "no snapshot loaded from Redis yet"
	case s.stale.Load():
		return false, fmt.Sprintf("Redis unreachable for more than %s: serving the last snapshot and fail-safes", s.opts.StaleAfter)
	}
	why := "snapshot " + s.hub.Current().Version
	if s.opts.Loss != nil {
		if lost := s.opts.Loss(); lost != "" {
			why += "; LOST: " + lost
		}
	}
	return true, why
}

func (s *Server) tlsConfig() (*tls.Config, error) {
	if s.opts.TLSCert == "" && s.opts.TLSKey == "" {
		if s.opts.ClientCA != "" {
			return nil, errors.New("flagd serve: --client-ca needs --tls-cert and --tls-key")
		}
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(s.opts.TLSCert, s.opts.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("flagd serve: TLS key pair %s, %s: %w", s.opts.TLSCert, s.opts.TLSKey, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
	if s.opts.ClientCA != "" {
		pem, err := os.ReadFile(s.opts.ClientCA)
		if err != nil {
			return nil, fmt.Errorf("flagd serve: client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("flagd serve: client CA %s holds no PEM certificate", s.opts.ClientCA)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}
