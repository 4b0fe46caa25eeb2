package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/flags"
	"github.com/stormctl/stormctl/flags/flagd"
	"github.com/stormctl/stormctl/internal/atomicfile"
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
	go loss.Run(ctx, lossCheckEvery, func(l *controlplane.Loss, err error) {
		if l != nil && err == nil {
			o.opts.Log.Error("control plane journal went back", "loss", l.String(), "entry", l.Entry)
		}
	})
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

// lossCheckEvery is how often a long-running reader checks that the
// journal has not gone back: a loss is reported within seconds.
const lossCheckEvery = 2 * time.Second

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

type flagsExportOptions struct {
	format, out, selector string
	watch                 bool
	timeout               time.Duration
}

// flagsExportWritten, when set (by tests), is called after each write with
// a function that stops a --watch as SIGTERM would.
var flagsExportWritten func(version string, stop context.CancelFunc)

func newFlagsExportCmd(f *Factory) *cobra.Command {
	o := &flagsExportOptions{}
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write the levers as a flagd flag file (for fleets running flagd itself)",
		Long: `Write the levers as a flagd flag configuration, the same one "stormctl flagd
serve" sends, validated by flagd's own evaluator. With --out the file is
written atomically (temporary file and rename) for flagd's file sync or a
ConfigMap; --watch rewrites it on every lever change and at every expiry.`,
		Example: `  stormctl flags export --format flagd --out /etc/flagd/stormctl.flagd.json --watch`,
		Args:    usageArgs(cobra.NoArgs),
		RunE:    func(cmd *cobra.Command, _ []string) error { return runFlagsExport(cmd.Context(), f, o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.format, "format", "flagd", "file format: flagd")
	fl.StringVar(&o.out, "out", "", "file to write (default: stdout)")
	fl.BoolVar(&o.watch, "watch", false, "keep running and rewrite on every change and expiry (needs --out)")
	fl.StringVar(&o.selector, "selector", "", "only the rules a client with this selector can match, e.g. service=checkout")
	fl.DurationVar(&o.timeout, "timeout", 10*time.Second, "how long to wait for Redis for the first read")
	return cmd
}

func runFlagsExport(ctx context.Context, f *Factory, o *flagsExportOptions) error {
	if err := textOnly(f, "flags export", "its --format flagd is flagd's own JSON flag configuration"); err != nil {
		return err
	}
	if o.format != "flagd" {
		return exit.NewUsage(fmt.Errorf("--format %q: the only format is flagd", o.format))
	}
	if o.watch && o.out == "" {
		return exit.NewUsage(errors.New("--watch rewrites a file: give --out"))
	}
	sel, err := flagd.ParseSelector(o.selector)
	if err != nil {
		return exit.NewUsage(err)
	}
	v, err := flagd.NewValidator()
	if err != nil {
		return err
	}
	client, display, ns, err := dialRedis(f)
	if err != nil {
		return err
	}
	defer client.Close()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The final error says what went wrong; the provider's retries stay quiet.
	p := flags.NewProvider(client, flags.Namespace(ns), flags.ErrorAfter(o.timeout),
		flags.Logger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer func() { _ = p.ShutdownWithContext(context.Background()) }()
	var got, timedOut atomic.Bool
	if !o.watch {
		t := time.AfterFunc(o.timeout, func() {
			if !got.Load() {
				timedOut.Store(true)
				stop()
			}
		})
		defer t.Stop()
	}
	var last string
	var werr error
	flagd.Follow(ctx, p, nil, 2*time.Second, func(in flagd.Input) {
		got.Store(true)
		if ver := flagd.Version(in); ver != last {
			raw := flagd.Render(in, sel).Marshal()
			werr = v.Validate(raw, in, sel)
			if werr == nil {
				werr = writeExport(f, o.out, append(raw, '\n'))
			}
			switch {
			case werr != nil && o.watch:
				fmt.Fprintf(f.IO.ErrOut, "flags export: %v; the previous file stays\n", werr)
			case werr == nil:
				last = ver
				if o.watch {
					fmt.Fprintf(f.IO.ErrOut, "flags export: wrote %s (version %s, %d levers)\n", o.out, ver, len(in.Levers))
				}
				if flagsExportWritten != nil {
					flagsExportWritten(ver, stop)
				}
			}
		}
		if !o.watch {
			stop()
		}
	})
	if timedOut.Load() {
		return &controlplane.UnavailableError{Addr: display, Op: "read the levers for flags export (nothing written)",
			Err: errors.New("no full read within " + o.timeout.String())}
	}
	return werr
}

func writeExport(f *Factory, path string, raw []byte) error {
	if path == "" {
		_, err := f.IO.Out.Write(raw)
		return err
	}
	return atomicfile.WriteFile(path, raw, 0o644)
}
