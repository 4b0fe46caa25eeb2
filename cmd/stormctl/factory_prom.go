package main

import (
	"fmt"
	"sync"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/queries"
)

// promDeps are the lazily built query dependencies of one run.
type promDeps struct {
	catOnce sync.Once
	cat     *queries.Catalog
	catErr  error

	runOnce sync.Once
	runner  *queries.Runner
	client  *queries.Client
	runErr  error
}

// Catalog loads the built-in queries plus --queries and the context's queries-dirs.
func (f *Factory) Catalog() (*queries.Catalog, error) {
	f.prom.catOnce.Do(func() {
		dirs := append([]string(nil), f.flags.queriesDirs...)
		if cfg, err := f.Config(); err == nil {
			dirs = append(dirs, cfg.QueriesDirs...)
		} else {
			f.prom.catErr = err
			return
		}
		f.prom.cat, f.prom.catErr = queries.Load(dirs...)
		if f.prom.catErr != nil {
			f.prom.catErr = exit.NewUsage(f.prom.catErr)
		}
	})
	return f.prom.cat, f.prom.catErr
}

// Runner connects to Prometheus (on first use only) and returns the shared runner.
func (f *Factory) Runner() (*queries.Runner, error) {
	f.prom.runOnce.Do(func() {
		cfg, err := f.Config()
		if err != nil {
			f.prom.runErr = err
			return
		}
		f.prom.client, f.prom.runErr = queries.NewClient(cfg.Prometheus, f.getenv)
		if f.prom.runErr != nil {
			return
		}
		f.prom.runner = queries.NewRunner(f.prom.client, queries.RunnerOptions{})
	})
	return f.prom.runner, f.prom.runErr
}

// PromClient returns the Prometheus client behind Runner, connecting on first use.
func (f *Factory) PromClient() (*queries.Client, error) {
	if _, err := f.Runner(); err != nil {
		return nil, err
	}
	return f.prom.client, nil
}

// packFor picks the pack that answers for a service: --pack, then the
// context's services map, then the stormctl metric contract; and the label
// names it uses there: the context's packs.<pack>.labels, then the service's.
func (f *Factory) packFor(flagPack, service string) (pack string, labels map[string]string, err error) {
	cfg, err := f.Config()
	if err != nil {
		return "", nil, err
	}
	svc := cfg.Services[service]
	switch {
	case flagPack != "":
		pack = flagPack
	case svc.Pack != "":
		pack = svc.Pack
	default:
		pack = "stormctl"
	}
	cat, err := f.Catalog()
	if err != nil {
		return "", nil, err
	}
	if _, err := cat.Pack(pack); err != nil {
		return "", nil, exit.NewUsage(fmt.Errorf("service %q: %w", service, err))
	}
	return pack, cfg.LabelsFor(pack, service), nil
}
