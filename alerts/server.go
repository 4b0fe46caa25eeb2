package alerts

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/net/netutil"
)

// Default addresses and bounds of `stormctl alerts serve`.
const (
	DefaultListen         = ":9095"
	DefaultManagementAddr = ":9096"
	DefaultMaxConns       = 64
)

// ServerOptions configure a Server.
type ServerOptions struct {
	Listen, ManagementAddr string
	// Token, when set, is the bearer token every webhook must carry;
	// HMACKey, when set, must sign every body (sign.go). At least one.
	Token   string
	HMACKey []byte
	// TLSCert and TLSKey serve the webhook listener over TLS.
	TLSCert, TLSKey string
	Limits          Limits
	MaxConns        int           // open connections to the webhook listener
	ReadTimeout     time.Duration // whole request, body included; default 10s
	IdleTimeout     time.Duration // keep-alive; default 60s
	Receiver        *Receiver
	// Ready says whether the control plane answers; /readyz fails while not.
	Ready func(ctx context.Context) error
	// Loss, if set, says whether the control plane's journal went back
	// (controlplane.LossDetector.Report; "" when not): /readyz stays ready
	// but names the loss, and /metrics sets stormctl_controlplane_journal_lost.
	Loss func() string
	Log  *slog.Logger
}

// Server is a running receiver: the webhook at /alertmanager on Listen, and
// /healthz, /readyz, /metrics on ManagementAddr.
type Server struct {
	opts    ServerOptions
	ln, mln net.Listener
	srv     []*http.Server
	wg      sync.WaitGroup
}

// Start listens on both addresses and serves.
func Start(o ServerOptions) (*Server, error) {
	if o.Token == "" && len(o.HMACKey) == 0 {
		return nil, errors.New("alerts serve: no authentication: give --token-env or --hmac-env")
	}
	if o.Receiver == nil {
		return nil, errors.New("alerts serve: no receiver")
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	o.Limits = o.Limits.withDefaults()
	o.MaxConns = orDefault(o.MaxConns, DefaultMaxConns)
	o.ReadTimeout = orDefault(o.ReadTimeout, 10*time.Second)
	o.IdleTimeout = orDefault(o.IdleTimeout, 60*time.Second)
	if o.Receiver.Metrics == nil {
		o.Receiver.Metrics = NewMetrics()
	}
	if o.Loss != nil {
		if err := o.Receiver.Metrics.watchLoss(o.Loss); err != nil {
			return nil, fmt.Errorf("alerts serve: %w", err)
		}
	}
	s := &Server{opts: o}
	var tlsCfg *tls.Config
	if o.TLSCert != "" || o.TLSKey != "" {
		cert, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("alerts serve: TLS: %w", err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	var err error
	if s.ln, err = net.Listen("tcp", o.Listen); err != nil {
		return nil, fmt.Errorf("alerts serve: listen on %s: %w", o.Listen, err)
	}
	if s.mln, err = net.Listen("tcp", o.ManagementAddr); err != nil {
		_ = s.ln.Close()
		return nil, fmt.Errorf("alerts serve: management listen on %s: %w", o.ManagementAddr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /alertmanager", s.webhook)
	hook := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: o.ReadTimeout,
		WriteTimeout: o.ReadTimeout + 30*time.Second, IdleTimeout: o.IdleTimeout, MaxHeaderBytes: 16 << 10, TLSConfig: tlsCfg,
		// Handshake failures (an untrusted client, plain HTTP) go to the log.
		ErrorLog: slog.NewLogLogger(o.Log.Handler(), slog.LevelWarn)}
	mgmt := &http.Server{Handler: s.management(), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 10 * time.Second, IdleTimeout: o.IdleTimeout}
	s.srv = []*http.Server{hook, mgmt}
	s.serve(hook, netutil.LimitListener(s.ln, o.MaxConns), tlsCfg != nil)
	s.serve(mgmt, netutil.LimitListener(s.mln, 16), false)
	return s, nil
}

func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

func (s *Server) serve(srv *http.Server, ln net.Listener, tls bool) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		var err error
		if tls {
			err = srv.ServeTLS(ln, "", "")
		} else {
			err = srv.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.opts.Log.Error("alerts serve: listener stopped", "err", err)
		}
	}()
}

// Addr is the webhook listener's address; MgmtAddr the management one's.
func (s *Server) Addr() string     { return s.ln.Addr().String() }
func (s *Server) MgmtAddr() string { return s.mln.Addr().String() }

// Shutdown stops accepting and waits for requests in flight until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	var errs []error
	for _, srv := range s.srv {
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, err)
			_ = srv.Close()
		}
	}
	s.wg.Wait()
	return errors.Join(errs...)
}

// webhook authenticates, reads within the limits, decodes and acts. A
// refusal acts on nothing and is counted under its reason.
func (s *Server) webhook(w http.ResponseWriter, req *http.Request) {
	start := time.Now()
	out, err := s.accept(w, req)
	var ref *RefusedError
	switch {
	case errors.As(err, &ref):
		s.opts.Receiver.Metrics.webhook(ref.Reason, time.Since(start).Seconds())
		s.opts.Log.Warn("webhook refused", "reason", ref.Reason, "detail", ref.Detail, "remote", req.RemoteAddr)
		http.Error(w, ref.Error(), ref.Status)
	case err != nil:
		s.opts.Receiver.Metrics.webhook("error", time.Since(start).Seconds())
		s.opts.Log.Error("webhook failed; Alertmanager will retry", "err", err)
		// 5xx: Alertmanager retries; the failed events were not claimed.
		http.Error(w, "alerts serve: "+err.Error(), http.StatusServiceUnavailable)
	default:
		s.opts.Receiver.Metrics.webhook("accepted", time.Since(start).Seconds())
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}
}

func (s *Server) accept(w http.ResponseWriter, req *http.Request) (Outcome, error) {
	o := s.opts
	if o.Token != "" {
		if err := checkBearer(req.Header, o.Token); err != nil {
			return Outcome{}, err
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, o.Limits.MaxBody))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return Outcome{}, refused("too_large", http.StatusRequestEntityTooLarge, "body over %d bytes", o.Limits.MaxBody)
	}
	if err != nil {
		return Outcome{}, refused("malformed", http.StatusBadRequest, "read body: %v", err)
	}
	var sigClaim string
	if len(o.HMACKey) > 0 {
		sig, err := VerifySignature(req.Header, o.HMACKey, body, time.Now())
		if err != nil {
			return Outcome{}, err
		}
		// A signature is good once: a captured request sent again is refused.
		sigClaim = "alert-signature:" + digest(sig)
		ok, err := o.Receiver.Claims.Claim(req.Context(), sigClaim, "1", 2*MaxSkew)
		if err != nil {
			return Outcome{}, err
		}
		if !ok {
			return Outcome{}, refused("replayed", http.StatusConflict, "this signed request was received before")
		}
	}
	m, err := Decode(body, o.Limits)
	if err != nil {
		return Outcome{}, err
	}
	out, err := o.Receiver.Handle(req.Context(), m)
	if err != nil && sigClaim != "" {
		// Answered 503, not acted on in full: the same signed request, sent
		// again as a retrying proxy does, may act on what is left (events
		// acted on already are duplicates by their own claims).
		uctx, cancel := afterwards(req.Context())
		_ = o.Receiver.Claims.Unclaim(uctx, sigClaim, "1")
		cancel()
	}
	return out, err
}

// management serves /healthz (the process is up), /readyz (the control
// plane answers; a journal loss is named but does not make it unready, as
// in flagd serve: the receiver still acts, and a responder must know) and
// /metrics.
func (s *Server) management() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, req *http.Request) {
		if s.opts.Ready != nil {
			ctx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
			defer cancel()
			if err := s.opts.Ready(ctx); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = fmt.Fprintln(w, "not ready: control plane:", err)
				return
			}
		}
		why := "ready"
		if s.opts.Loss != nil {
			if lost := s.opts.Loss(); lost != "" {
				why += "; LOST: " + lost
			}
		}
		_, _ = fmt.Fprintln(w, why)
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.opts.Receiver.Metrics.Registry, promhttp.HandlerOpts{}))
	return mux
}
