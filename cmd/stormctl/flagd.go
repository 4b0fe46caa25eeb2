package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/flags/flagd"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/lever"
)

func newFlagdCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "flagd",
		Short: "Serve the levers over flagd's protocols to OpenFeature services in any language",
	}
	cmd.AddCommand(newFlagdServeCmd(f))
	return cmd
}

type flagdServeOptions struct {
	opts      flagd.Options
	failSafes []string
}

// flagdServeStarted, when set (by tests), is called with the running server
// and a function that stops it as SIGTERM would.
var flagdServeStarted func(*flagd.Server, context.CancelFunc)

func newFlagdServeCmd(f *Factory) *cobra.Command {
	o := &flagdServeOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the levers as flagd sync, evaluation and OFREP services",
		Long: `Serve the levers of the current context's Redis as a flagd flag configuration
on flagd's own default ports, so existing flagd providers work unchanged:

  sync        flagd.sync.v1.FlagSyncService (in-process providers)     --sync-addr  127.0.0.1:8015
  evaluation  flagd.evaluation.v1 and v2, gRPC and Connect (RPC mode)  --eval-addr  127.0.0.1:8013
  OFREP       /ofrep/v1/evaluate/flags[/{key}], with ETag              --ofrep-addr 127.0.0.1:8016
  management  /healthz, /readyz, /metrics                              --management-addr 127.0.0.1:8014

Every listener is on loopback unless an address is given: in a pod that
serves others, pass --sync-addr :8015 (and so on). Each caps its open
connections (--max-conns) and closes idle ones (--read-timeout,
--idle-timeout); management keeps its own connections, so /readyz answers
while the others are full.

Clients set the evaluation-context attributes service and dependency; a
selector such as service=checkout sends a client only the rules it can match.
If Redis is lost the last snapshot keeps being served; after --stale-after
/readyz fails and --fail-safe values apply. SIGTERM shuts down gracefully.`,
		Example: `  stormctl flagd serve --fail-safe stormctl.degraded.mode=on
  stormctl flagd serve --tls-cert tls.crt --tls-key tls.key --client-ca ca.crt`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return runFlagdServe(cmd.Context(), f, o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.opts.SyncAddr, "sync-addr", flagd.DefaultSyncAddr, "listen address of the sync service")
	fl.StringVar(&o.opts.EvalAddr, "eval-addr", flagd.DefaultEvalAddr, "listen address of the evaluation services (gRPC + Connect)")
	fl.StringVar(&o.opts.OFREPAddr, "ofrep-addr", flagd.DefaultOFREPAddr, "listen address of OFREP")
	fl.StringVar(&o.opts.ManagementAddr, "management-addr", flagd.DefaultManagementAddr, "listen address of /healthz, /readyz, /metrics")
	fl.StringVar(&o.opts.TLSCert, "tls-cert", "", "PEM certificate: serve TLS on every listener")
	fl.StringVar(&o.opts.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	fl.StringVar(&o.opts.ClientCA, "client-ca", "", "PEM CA bundle: require client certificates signed by it (mTLS)")
	fl.DurationVar(&o.opts.StaleAfter, "stale-after", flagd.DefaultStaleAfter, "how long Redis may be lost before /readyz fails and fail-safes apply")
	fl.StringArrayVar(&o.failSafes, "fail-safe", nil, "FLAG=VALUE served while Redis is lost, e.g. stormctl.degraded.mode=on (repeatable)")
	fl.IntVar(&o.opts.MaxStreams, "max-streams", flagd.DefaultMaxStreams, "most sync and event streams open at once")
	fl.DurationVar(&o.opts.WriteTimeout, "write-timeout", flagd.DefaultWriteTimeout, "a client that accepts no data for this long is disconnected")
	fl.DurationVar(&o.opts.ReadTimeout, "read-timeout", flagd.DefaultReadTimeout, "a client must send a request's headers within this (and on OFREP and management its whole body)")
	fl.DurationVar(&o.opts.IdleTimeout, "idle-timeout", flagd.DefaultIdleTimeout, "a keep-alive connection idle this long is closed")
	fl.IntVar(&o.opts.MaxConns, "max-conns", 0, "most open connections on each of sync, evaluation and OFREP (default: the open-file limit less a reserve for management and Redis, shared by the three)")
	fl.StringVar(&o.opts.InstanceID, "instance-id", "", "id of this server in acknowledgements (default hostname-pid-random)")
	return cmd
}

func runFlagdServe(ctx context.Context, f *Factory, o *flagdServeOptions) error {
	if err := textOnly(f, "flagd serve", "it serves until stopped and logs to stderr; /metrics and /readyz on the management address report its state"); err != nil {
		return err
	}
	o.opts.FailSafe = map[string]any{}
	for _, s := range o.failSafes {
		k, v, err := flagd.ParseFailSafe(s)
		if err != nil {
			return exit.NewUsage(err)
		}
		o.opts.FailSafe[k] = v
	}
	client, display, ns, err := dialRedis(f)
	if err != nil {
		return err
	}
	defer client.Close()
	o.opts.Redis, o.opts.Namespace = client, ns
	o.opts.Log = slog.New(slog.NewTextHandler(f.IO.ErrOut, nil))
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	loss := controlplane.NewClientLossDetector(client, ns, display, f.getenv)
	o.opts.Loss = loss.Report
	go loss.Watch(ctx, o.opts.Log)
	srv, err := flagd.Start(o.opts)
	if err != nil {
		return err
	}
	shown := ns
	if shown == "" {
		shown = lever.DefaultNamespace // the keys NewKeys uses for ""
	}
	fmt.Fprintf(f.IO.ErrOut, "flagd: levers from %s (namespace %q)\nflagd: sync %s, evaluation %s, OFREP %s, management %s\n",
		display, shown, srv.Addr("sync"), srv.Addr("eval"), srv.Addr("ofrep"), srv.Addr("management"))
	if flagdServeStarted != nil {
		flagdServeStarted(srv, stop)
	}
	<-ctx.Done()
	fmt.Fprintln(f.IO.ErrOut, "flagd: shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// dialRedis builds the current context's Redis client without dialing, so
// a long-running reader starts while Redis is down.
func dialRedis(f *Factory) (redis.UniversalClient, string, string, error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, "", "", err
	}
	quietRedisOnce.Do(func() { redis.SetLogger(quietLogger{}) })
	client, display, err := controlplane.Dial(cfg.Redis, f.getenv)
	if err != nil {
		return nil, "", "", exit.NewUsage(err)
	}
	return client, display, cfg.Redis.Namespace, nil
}

func newFlagsCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "flags",
		Short: "The flag contract the levers are served as",
	}
	cmd.AddCommand(newFlagsExportCmd(f))
	return cmd
}
