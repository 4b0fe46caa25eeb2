package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/alerts"
	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/exit"
)

func newAlertsCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "alerts",
		Short: "Receive Alertmanager's webhooks: incidents, playbooks, notifications, autopilot",
	}
	cmd.AddCommand(newAlertsServeCmd(f))
	return cmd
}

type alertsServeOptions struct {
	opts              alerts.ServerOptions
	tokenEnv, hmacEnv string
}

// alertsServeStarted, when set (by tests), is called with the running
// server and a function that stops it as SIGTERM would.
var alertsServeStarted func(*alerts.Server, context.CancelFunc)

func newAlertsServeCmd(f *Factory) *cobra.Command {
	o := &alertsServeOptions{}
	cmd := &cobra.Command{
		Use:   "serve --listen ADDR --token-env VAR [--hmac-env VAR] [--management-addr ADDR]",
		Short: "Serve Alertmanager's webhook (payload version 4) at /alertmanager",
		Long: `Serve Alertmanager's webhook at /alertmanager. Point a webhook_configs url at it,
with http_config.authorization (type Bearer) holding the token of --token-env.

For each alert of a group: open an incident or attach to the open one (one per
group key), journal alert.fired or alert.resolved with the labels, startsAt and
the query's value, and name the playbook (alerts.playbooks in the context, then
the built-in mapping). Notifications to alerts.notify webhooks are queued in
Redis before the webhook is answered, and posted by any replica: one killed
before posting leaves them to another after alerts.event-lease. Where the
context's autopilot lists the service for the lever kind (autopilot: {retries:
[checkout]}), the playbook runs unattended as "automation" up to its first
lever step whose when: holds (its checks run; a lever step whose condition
does not hold is skipped), and that lever is pulled through every guard, with
a TTL of alerts.autopilot-ttl (10m).

Every event is claimed in Redis first, so replicas and Alertmanager's retries
act once. The claim is a lease (alerts.event-lease, 1m) until the event is
acted on: a replica that dies mid-event holds it no longer, and Alertmanager's
retry acts on it elsewhere; a delivery that finds the event still being acted
on waits for it, then answers 503 so that Alertmanager tries again. /healthz, /readyz and /metrics answer on --management-addr.
Refusals (token, signature, replay, size, malformed) are counted in /metrics.`,
		Example: `  STORMCTL_ALERTS_TOKEN=s3cret stormctl alerts serve --listen :9095 --token-env STORMCTL_ALERTS_TOKEN`,
		Args:    usageArgs(cobra.NoArgs),
		RunE:    func(cmd *cobra.Command, _ []string) error { return runAlertsServe(cmd.Context(), f, o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.opts.Listen, "listen", alerts.DefaultListen, "listen address of the webhook")
	fl.StringVar(&o.opts.ManagementAddr, "management-addr", alerts.DefaultManagementAddr, "listen address of /healthz, /readyz, /metrics")
	fl.StringVar(&o.tokenEnv, "token-env", "", "environment variable holding the bearer token webhooks must carry")
	fl.StringVar(&o.hmacEnv, "hmac-env", "", "environment variable holding the HMAC key that must sign every body ("+alerts.HeaderSignature+")")
	fl.StringVar(&o.opts.TLSCert, "tls-cert", "", "PEM certificate: serve the webhook over TLS")
	fl.StringVar(&o.opts.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	fl.Int64Var(&o.opts.Limits.MaxBody, "max-body", 1<<20, "largest webhook body in bytes")
	fl.IntVar(&o.opts.Limits.MaxAlerts, "max-alerts", 1000, "most alerts in one group")
	fl.IntVar(&o.opts.MaxConns, "max-conns", alerts.DefaultMaxConns, "most open connections to the webhook")
	return cmd
}

func runAlertsServe(ctx context.Context, f *Factory, o *alertsServeOptions) error {
	if err := textOnly(f, "alerts serve", "it serves until stopped and logs to stderr; /metrics and /readyz report its state"); err != nil {
		return err
	}
	if o.tokenEnv == "" && o.hmacEnv == "" {
		return exit.NewUsage(errors.New("give --token-env (Alertmanager's bearer token) or --hmac-env: the webhook pulls levers"))
	}
	for _, env := range []struct {
		name string
		to   func(string)
	}{{o.tokenEnv, func(v string) { o.opts.Token = v }}, {o.hmacEnv, func(v string) { o.opts.HMACKey = []byte(v) }}} {
		if env.name == "" {
			continue
		}
		v := f.getenv(env.name)
		if len(v) < 16 {
			return exit.NewUsage(fmt.Errorf("$%s: want a secret of at least 16 characters", env.name))
		}
		env.to(v)
	}
	if f.flags.Actor == "" {
		f.flags.Actor = alerts.Actor
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(f.IO.ErrOut, nil))
	rcv, closeAll, err := f.alertsReceiver(ctx, log)
	if err != nil {
		return err
	}
	defer closeAll()
	o.opts.Receiver, o.opts.Log = rcv, log
	store, err := f.Store(ctx)
	if err != nil {
		return err
	}
	o.opts.Ready = func(ctx context.Context) error { return store.Client().Ping(ctx).Err() }
	loss := controlplane.NewLossDetector(store, store.MarkPath(f.getenv))
	o.opts.Loss = loss.Report
	go loss.Watch(ctx, log)
	srv, err := alerts.Start(o.opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "alerts: webhook http%s://%s/alertmanager, management %s\n", tlsS(o.opts.TLSCert), srv.Addr(), srv.MgmtAddr())
	if alertsServeStarted != nil {
		alertsServeStarted(srv, stop)
	}
	<-ctx.Done()
	fmt.Fprintln(f.IO.ErrOut, "alerts: shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

func tlsS(cert string) string {
	if cert != "" {
		return "s"
	}
	return ""
}
