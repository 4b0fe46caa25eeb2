package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/iostreams"
	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/journal"
)

// Actions builds the guarded action service of the current context; an
// unreachable control plane is an error matching
// controlplane.ErrUnavailable.
func (f *Factory) Actions(ctx context.Context) (*actions.Service, error) {
	s, storeErr, err := f.actions(ctx)
	if err != nil {
		return nil, err
	}
	if storeErr != nil {
		return nil, storeErr
	}
	return s, nil
}

// Attempts is Actions for a responder's own actions (action plan, apply
// and request, and the dashboard's): when the control plane cannot be
// opened, the service is built over actions.Unreachable, so the normal
// path journals each attempt into the local pending file and fails with
// the reason.
func (f *Factory) Attempts(ctx context.Context) (*actions.Service, error) {
	s, storeErr, err := f.actions(ctx)
	if err != nil {
		return nil, err
	}
	if storeErr != nil {
		s.Store, s.Journal = actions.Unreachable(storeErr), journal.NewWriter(nil, f.PendingPath())
	}
	return s, nil
}

// actions builds the service; storeErr is why the control plane could not
// be opened, and the service then has no Store or Journal.
func (f *Factory) actions(ctx context.Context) (s *actions.Service, storeErr, err error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, nil, err
	}
	if cfg.Actor == "" {
		return nil, nil, exit.NewUsage(errors.New("who is acting? set --actor, STORMCTL_ACTOR or actor in the context"))
	}
	pol, err := actions.NewPolicy(cfg.Policy, cfg.Evidence)
	if err != nil {
		return nil, nil, exit.NewUsage(fmt.Errorf("context %s: %w", cfg.Name, err))
	}
	names := actions.NewNames(cfg.Inventory, cfg.Services, promLabels{f})
	names.Cache = f.labelCache(cfg.Name)
	s = &actions.Service{
		Policy:    pol,
		Inventory: names,
		Evidence:  f.evidence(),
		Clock:     actions.SystemClock{},
	}
	if f.IO.IsStdinTTY() {
		s.Confirm = &ttyConfirmer{io: f.IO, in: bufio.NewReader(f.IO.In)}
	}
	if cfg.Actor == actions.Automation {
		s.RunBy = f.runBy()
	}
	store, err := f.Store(ctx)
	if err != nil {
		return s, err, nil
	}
	s.Store, s.Journal = actions.FromStore(store), journal.NewWriter(store, f.PendingPath())
	return s, nil, nil
}

// runBy is the person who started an automation run, as the process
// declares it: $SUDO_USER, else $USER; "" when neither is a usable name.
func (f *Factory) runBy() string {
	for _, v := range []string{f.getenv("SUDO_USER"), f.getenv("USER")} {
		if name, err := sanitize.Actor(v); err == nil && name != "" && name != actions.Automation {
			return name
		}
	}
	return ""
}

// labelCache is where the context's label values are kept for when
// Prometheus is down: $XDG_CACHE_HOME/stormctl/CONTEXT/labels.json (or the
// platform's user cache directory); nil when there is none.
func (f *Factory) labelCache(context string) *actions.LabelCache {
	dir := f.getenv("XDG_CACHE_HOME")
	if dir == "" {
		var err error
		if dir, err = os.UserCacheDir(); err != nil {
			return nil
		}
	}
	if context == "" {
		context = "default"
	}
	return &actions.LabelCache{Path: filepath.Join(dir, "stormctl", url.PathEscape(context), "labels.json")}
}

// evidence measures saved queries through the shared runner; without a
// usable Prometheus every measurement fails, so actions need --force.
func (f *Factory) evidence() actions.Evidence {
	cat, err := f.Catalog()
	if err != nil {
		return actions.Unavailable{Err: err}
	}
	runner, err := f.Runner()
	if err != nil {
		return actions.Unavailable{Err: err}
	}
	return &actions.QueryEvidence{Catalog: cat, Runner: runner, PackFor: func(service string) (string, map[string]string, error) {
		return f.packFor("", service)
	}}
}

// promLabels reads label values through the context's Prometheus client,
// built only if the inventory needs it.
type promLabels struct{ f *Factory }

func (p promLabels) LabelValues(ctx context.Context, label string) ([]string, error) {
	client, err := p.f.PromClient()
	if err != nil {
		return nil, err
	}
	return actions.PromLabels{Client: client}.LabelValues(ctx, label)
}

// ttyConfirmer asks on the terminal and reads one line.
type ttyConfirmer struct {
	io *iostreams.IOStreams
	in *bufio.Reader
}

func (c *ttyConfirmer) Confirm(_ context.Context, prompt, want string) (bool, error) {
	fmt.Fprint(c.io.ErrOut, prompt)
	line, err := c.in.ReadString('\n')
	if err != nil && line == "" {
		return false, err
	}
	return strings.TrimSpace(line) == want, nil
}
