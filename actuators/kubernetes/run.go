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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
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
	// Started, if set, receives the actuator and the bound listen address
	// once the manager is set up (tests use it to wait and to poke).
	Started func(a *Actuator, addr string)
}

// Run runs the actuator as a controller-runtime manager until ctx ends:
// an informer cache of the three kinds in the mapping's namespace (object
// events and the change feed both trigger a pass; resyncs catch the rest),
// leader election on a Lease, and the HTTP endpoints.
func Run(ctx context.Context, o RunOptions) error {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	ctrllog.SetLogger(logr.FromSlogHandler(o.Log.Handler()))
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := NewMetrics(reg)
	lease := func(d, def time.Duration) *time.Duration {
		if d <= 0 {
			d = def
		}
		return &d
	}
	cfg := rest.CopyConfig(o.Config)
	if cfg.QPS == 0 {
		// client-go's default (5 qps) would take seconds to freeze a large
		// service; 50 qps is still gentle on an API server.
		cfg.QPS, cfg.Burst = 50, 100
	}
	mgr, err := manager.New(cfg, manager.Options{
		Cache:                         cache.Options{DefaultNamespaces: map[string]cache.Config{o.Mapping.Namespace: {}}},
		Client:                        client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		LeaderElection:                true,
		LeaderElectionID:              LeaseName,
		LeaderElectionNamespace:       o.Mapping.Namespace,
		LeaderElectionResourceLock:    "leases",
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 lease(o.LeaseDuration, 15*time.Second),
		RenewDeadline:                 lease(o.RenewDeadline, 10*time.Second),
		RetryPeriod:                   lease(o.RetryPeriod, 2*time.Second),
	})
	if err != nil {
		return fmt.Errorf("kubernetes actuator: set up the manager against %s: %w", o.Config.Host, err)
	}
	a := New(Options{Mapping: o.Mapping, Store: o.Store, Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Mapper: mgr.GetRESTMapper(), Instance: o.Instance, Actor: o.Actor, Resync: o.Resync, Log: o.Log, Metrics: metrics})
	if err := mgr.Add(&informers{a: a, cache: mgr.GetCache()}); err != nil {
		return err
	}
	if err := mgr.Add(a); err != nil {
		return err
	}
	addr := ""
	if o.Listen != "" {
		ln, err := net.Listen("tcp", o.Listen)
		if err != nil {
			return fmt.Errorf("kubernetes actuator: listen on %s: %w", o.Listen, err)
		}
		addr = ln.Addr().String()
		srv := &http.Server{Handler: endpoints(a, mgr, reg), ReadHeaderTimeout: 5 * time.Second,
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

// informers registers an event handler on each served kind, on every
// replica (so a new leader starts warm); events poke the actuator, which
// ignores them unless it leads. It does not need leader election.
type informers struct {
	a     *Actuator
	cache cache.Cache
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (i *informers) NeedLeaderElection() bool { return false }

// Start implements manager.Runnable.
func (i *informers) Start(ctx context.Context) error {
	served := i.a.discover()
	for _, gvk := range Kinds {
		if !served[gvk] {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		inf, err := i.cache.GetInformer(ctx, u)
		if err != nil {
			return fmt.Errorf("watch %s: %w", resources[gvk], err)
		}
		poke := func(any) { i.a.Poke() }
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: poke, DeleteFunc: poke, UpdateFunc: func(_, n any) { poke(n) },
		}); err != nil {
			return err
		}
	}
	<-ctx.Done()
	return nil
}

// endpoints serves /healthz (the process runs), /readyz (the cache is
// synced and, on the leader, a first pass completed; a standby is ready)
// and /metrics.
func endpoints(a *Actuator, mgr manager.Manager, reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			http.Error(w, "informer cache not synced", http.StatusServiceUnavailable)
			return
		}
		select {
		case <-mgr.Elected():
			select {
			case <-a.Ready():
			default:
				http.Error(w, "leader: first pass not completed", http.StatusServiceUnavailable)
				return
			}
		default:
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{MaxRequestsInFlight: 4, Timeout: 10 * time.Second}))
	return mux
}
