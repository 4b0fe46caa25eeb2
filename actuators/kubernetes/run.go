package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/stormctl/stormctl/controlplane"
)

// LeaseName is the coordination.k8s.io Lease the replicas elect a leader
// on; only the leader acts.
const LeaseName = "stormctl-actuator-kubernetes"

// RunOptions configure Run.
type RunOptions struct {
	Config   *rest.Config
	Mapping  Mapping
	Store    *controlplane.Store
	Instance string
	Actor    string
	Resync   time.Duration
	// Listen is the address of /healthz, /readyz and /metrics ("" none).
	Listen string
	// Lease timings (15s, 10s, 2s by default, as controller-runtime's).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	Log                                       *slog.Logger
	// MarkPath holds the furthest journal position seen across restarts
	// (controlplane.Store.MarkPath); "" keeps it in memory.
	MarkPath string
	// ReadyChecks are added to the actuator's own /readyz checks.
	ReadyChecks []Check
	// Started, if set, receives the actuator and the bound listen address
	// once the manager is set up (tests use it to wait and to poke).
	Started func(a *Actuator, addr string)
}

// Run runs the actuator until ctx ends, through API server outages: a
// controller-runtime manager holding an informer cache of the kinds in the
// mapping's namespace, watched as discovery finds them served (object events
// and the change feed both trigger a pass; resyncs catch the rest); leader
// election on a Lease, campaigning again whenever the lease is lost; and the
// HTTP endpoints.
func Run(ctx context.Context, o RunOptions) error {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	ctrllog.SetLogger(logr.FromSlogHandler(o.Log.Handler()))
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := NewMetrics(reg)
	lease := func(d, def time.Duration) time.Duration {
		if d <= 0 {
			return def
		}
		return d
	}
	cfg := rest.CopyConfig(o.Config)
	if cfg.QPS == 0 {
		// client-go's default (5 qps) would take seconds to freeze a large
		// service; 50 qps is still gentle on an API server.
		cfg.QPS, cfg.Burst = 50, 100
	}
	mgr, err := manager.New(cfg, manager.Options{
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{o.Mapping.Namespace: {}}},
		Client:                 client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Leader election is the elector's (see there why).
		LeaderElection: false,
	})
	if err != nil {
		return fmt.Errorf("kubernetes actuator: set up the manager against %s: %w", o.Config.Host, err)
	}
	a := New(Options{Mapping: o.Mapping, Store: o.Store, Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Mapper: mgr.GetRESTMapper(), Cache: mgr.GetCache(), Instance: o.Instance, Actor: o.Actor, Resync: o.Resync, Log: o.Log, Metrics: metrics})
	el, err := newElector(a, cfg, o.Mapping.Namespace, o.Instance, lease(o.LeaseDuration, 15*time.Second),
		lease(o.RenewDeadline, 10*time.Second), lease(o.RetryPeriod, 2*time.Second), o.Log)
	if err != nil {
		return fmt.Errorf("kubernetes actuator: %w", err)
	}
	if err := mgr.Add(manager.RunnableFunc(a.WatchKinds)); err != nil {
		return err
	}
	if err := mgr.Add(el); err != nil {
		return err
	}
	loss := controlplane.NewLossDetector(o.Store, o.MarkPath)
	registerLoss(reg, loss)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go loss.Watch(watchCtx, o.Log)
	ready := a.readiness(el.lock)
	ready.Add(lossCheck(loss))
	for _, c := range o.ReadyChecks {
		ready.Add(c)
	}
	addr := ""
	if o.Listen != "" {
		ln, err := net.Listen("tcp", o.Listen)
		if err != nil {
			return fmt.Errorf("kubernetes actuator: listen on %s: %w", o.Listen, err)
		}
		addr = ln.Addr().String()
		srv := &http.Server{Handler: endpoints(ready, reg), ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second, MaxHeaderBytes: 16 << 10}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
	}
	if o.Started != nil {
		o.Started(a, addr)
	}
	if err := mgr.Start(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("kubernetes actuator: %w", err)
	}
	return nil
}

// endpoints serves /healthz (the process runs), /readyz (every readiness
// check holds; the body names each) and /metrics.
func endpoints(ready *Readiness, reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.Handle("/readyz", ready)
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{MaxRequestsInFlight: 4, Timeout: 10 * time.Second}))
	return mux
}
