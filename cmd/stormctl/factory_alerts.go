package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"text/template"
	"time"

	"github.com/stormctl/stormctl/alerts"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/playbooks"
)

// alertsReceiver wires the receiver, its notifier and its autopilot from
// the current context; closeAll stops the background work.
func (f *Factory) alertsReceiver(ctx context.Context, log *slog.Logger) (*alerts.Receiver, func(), error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, nil, err
	}
	svc, err := f.Actions(ctx)
	if err != nil {
		return nil, nil, err
	}
	store, err := f.Store(ctx)
	if err != nil {
		return nil, nil, err
	}
	var hooks []alerts.Webhook
	for i, n := range cfg.Alerts.Notify {
		h := alerts.Webhook{URL: n.URL}
		if n.HMACEnv != "" {
			if h.Key = []byte(f.getenv(n.HMACEnv)); len(h.Key) == 0 {
				return nil, nil, exit.NewUsage(fmt.Errorf("alerts.notify[%d].hmac-env: $%s is empty", i, n.HMACEnv))
			}
		}
		if n.Template != "" {
			if h.Tmpl, err = template.New(filepath.Base(n.Template)).Funcs(alerts.TemplateFuncs).ParseFiles(n.Template); err != nil {
				return nil, nil, exit.NewUsage(fmt.Errorf("alerts.notify[%d].template: %w", i, err))
			}
		}
		hooks = append(hooks, h)
	}
	set, err := f.Playbooks(nil)
	if err != nil {
		return nil, nil, err
	}
	lease := cmp.Or(time.Duration(cfg.Alerts.EventLease), alerts.DefaultEventLease)
	if lease < alerts.MinLease {
		return nil, nil, exit.NewUsage(fmt.Errorf("alerts.event-lease: %s is under the least, %s", lease, alerts.MinLease))
	}
	m := alerts.NewMetrics()
	notifier := alerts.NewNotifier(hooks, store.Outbox(lease), m, log)
	pilot := &alerts.Autopilot{Actions: svc, Playbooks: func(name string) (*playbooks.Playbook, error) { return set.Get(name) },
		Measurer: &lazyMeasurer{f: f}, Allow: cfg.Autopilot, Modes: cfg.DegradedModes(), TTL: time.Duration(cfg.Alerts.AutopilotTTL),
		Notifier: notifier, Metrics: m, Log: log}
	rcv := &alerts.Receiver{Claims: store, Actions: svc, Playbook: alerts.PlaybookFor(cfg.Alerts.Playbooks),
		Notifier: notifier, Autopilot: pilot, Metrics: m, Log: log, EventLease: lease}
	return rcv, func() {
		pilot.Close()
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		notifier.Close(cctx)
	}, nil
}
