package main

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/lab"
	"github.com/stormctl/stormctl/lab/alertloop"
)

// labControl is the control plane a lab run reads its levers from.
type labControl struct {
	store    *controlplane.Store
	url      string // for another terminal's STORMCTL_REDIS_URL, password redacted
	embedded *lab.EmbeddedRedis
}

// openLabControl connects to the Redis of --redis-url, or starts an
// embedded server. Only the flag counts: a context's Redis, or
// STORMCTL_REDIS_URL, may be production's.
func openLabControl(ctx context.Context, f *Factory) (*labControl, error) {
	cp := &labControl{}
	raw := f.flags.RedisURL
	if raw == "" {
		e, err := lab.StartEmbeddedRedis("127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		cp.embedded, raw = e, e.URL
	}
	store, err := controlplane.Open(ctx, config.Redis{URL: raw}, f.getenv)
	if err != nil {
		cp.close()
		return nil, err
	}
	// The lab's journal is signed like any other, so that verify can be
	// rehearsed on it.
	signer, err := f.Signer()
	if err != nil {
		store.Close()
		cp.close()
		return nil, err
	}
	store.SetSigner(signer)
	cp.store, cp.url = store, raw
	if u, err := url.Parse(raw); err == nil {
		cp.url = u.Redacted()
	}
	return cp, nil
}

func (cp *labControl) close() {
	if cp.store != nil {
		cp.store.Close()
	}
	if cp.embedded != nil {
		cp.embedded.Close()
	}
}

// labActor pulls --events when no actor is configured at all.
const labActor = "stormctl-lab"

// actions builds the service that pulls --events: the context's policy and
// actor, evidence and inventory from the lab's own API at promURL.
func (cp *labControl) actions(f *Factory, l *lab.Lab, promURL string) (*lab.Actions, error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, err
	}
	pol, err := actions.NewPolicy(cfg.Policy, cfg.Evidence)
	if err != nil {
		return nil, exit.NewUsage(fmt.Errorf("context %s: %w", cfg.Name, err))
	}
	svc, err := l.NewActions(lab.ActionsOptions{Store: cp.store, PromURL: promURL, Policy: pol, PendingPath: f.PendingPath()})
	if err != nil {
		return nil, err
	}
	return &lab.Actions{Service: svc, Actor: cmp.Or(cfg.Actor, labActor)}, nil
}

// autopilot builds the alerting loop of --autopilot: the context's
// policy, playbooks, query→playbook mapping, autopilot list and TTL, on the
// lab's control plane with evidence from the lab's API at promURL.
func (cp *labControl) autopilot(f *Factory, l *lab.Lab, promURL string, groupWait time.Duration) (*alertloop.Loop, error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, err
	}
	pol, err := actions.NewPolicy(cfg.Policy, cfg.Evidence)
	if err != nil {
		return nil, exit.NewUsage(fmt.Errorf("context %s: %w", cfg.Name, err))
	}
	if groupWait == 0 {
		groupWait = -1 // none: alertloop reads 0 as its default
	}
	loop, err := alertloop.Start(alertloop.Options{Lab: l, Store: cp.store, PromURL: promURL, Policy: pol, PendingPath: f.PendingPath(),
		QueriesDirs: append(slices.Clone(f.flags.queriesDirs), cfg.QueriesDirs...), PlaybooksDirs: cfg.PlaybooksDirs,
		Playbooks: cfg.Alerts.Playbooks, Autopilot: true, Allow: cfg.Autopilot, Modes: cfg.DegradedModes(), TTL: time.Duration(cfg.Alerts.AutopilotTTL),
		GroupWait: groupWait})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(f.IO.ErrOut, "lab: autopilot on: %d alerting rules evaluated every %s, group_wait %s\n", loop.Rules(), alertloop.DefaultEvery, max(groupWait, 0))
	return loop, nil
}

// printPulls reports on stderr what became of each scheduled lever.
func printPulls(f *Factory, pulls []lab.Pull) {
	for _, p := range pulls {
		e := p.Event
		what := fmt.Sprintf("%s %s %s", e.Kind, e.Target, e.Value)
		if e.Value == "" {
			what = fmt.Sprintf("release %s %s", e.Kind, e.Target)
		}
		if p.Err != nil {
			fmt.Fprintf(f.IO.ErrOut, "lab: at %s, %s: %v\n", e.At.D(), what, p.Err)
			continue
		}
		fmt.Fprintf(f.IO.ErrOut, "lab: at %s, %s: done, action %s\n", e.At.D(), what, p.Result.ActionID)
	}
}
