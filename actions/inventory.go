package actions

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/suggest"
)

// LabelSource lists the values of a label, e.g. from Prometheus.
type LabelSource interface {
	LabelValues(ctx context.Context, label string) ([]string, error)
}

// Names is the Inventory of a context: the names listed in config (the
// inventory lists and the services map) and, when enabled, the values of
// the service and dependency labels in Prometheus, read once per process.
type Names struct {
	static map[NameRole][]string
	source LabelSource // nil: config only
	labels map[NameRole]string
	// Cache, if set, keeps every successful read of the label values and
	// answers from it while the source fails.
	Cache *LabelCache

	mu    sync.Mutex
	cache map[NameRole][]string
	err   map[NameRole]error
}

// NewNames builds the inventory of a context. src is used when
// from-prometheus is true, or unset and neither list is given.
func NewNames(inv config.Inventory, services map[string]config.Service, src LabelSource) *Names {
	n := &Names{
		static: map[NameRole][]string{
			ServiceName:    append(slices.Clone(inv.Services), sortedKeys(services)...),
			DependencyName: slices.Clone(inv.Dependencies),
		},
		labels: map[NameRole]string{ServiceName: "service", DependencyName: "dependency"},
		cache:  map[NameRole][]string{},
		err:    map[NameRole]error{},
	}
	if inv.ServiceLabel != "" {
		n.labels[ServiceName] = inv.ServiceLabel
	}
	if inv.DependencyLabel != "" {
		n.labels[DependencyName] = inv.DependencyLabel
	}
	useProm := len(inv.Services) == 0 && len(inv.Dependencies) == 0
	if inv.FromPrometheus != nil {
		useProm = *inv.FromPrometheus
	}
	if useProm {
		n.source = src
	}
	return n
}

// Known implements Inventory. A name known only from the cache is known,
// with a *StaleNamesError saying so.
func (n *Names) Known(ctx context.Context, role NameRole, name string) (bool, []string, error) {
	names := n.static[role]
	if slices.Contains(names, name) {
		return true, nil, nil
	}
	var err error
	if n.source != nil {
		var fetched []string
		fetched, err = n.fetch(ctx, role)
		if slices.Contains(fetched, name) {
			return true, nil, err // err: known from the cache only
		}
		names = append(slices.Clone(names), fetched...)
	}
	sort.Strings(names)
	return false, suggest.Closest(name, slices.Compact(names)), err
}

func (n *Names) fetch(ctx context.Context, role NameRole) ([]string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if vs, ok := n.cache[role]; ok {
		return vs, n.err[role]
	}
	label := n.labels[role]
	vs, err := n.source.LabelValues(ctx, label)
	switch {
	case err == nil && n.Cache != nil:
		// A cache that cannot be written costs only the fallback.
		_ = n.Cache.Save(label, vs, time.Now())
	case err != nil:
		stale := &StaleNamesError{Err: err}
		if n.Cache != nil {
			c, ok, cerr := n.Cache.Load(label)
			if ok {
				vs, stale.ReadAt = c.Values, c.ReadAt
			}
			stale.CacheErr = cerr
		}
		err = stale
	}
	n.cache[role], n.err[role] = vs, err
	return vs, err
}
