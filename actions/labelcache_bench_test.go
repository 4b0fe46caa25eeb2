package actions

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/queries"
)

// BenchmarkNamesFirstRead is the validation guard's first look-up in a
// process (later ones hit the in-process cache): from a real Prometheus
// (the baseline: what every action already pays), then on an in-memory
// source without a cache, with the local cache kept (unchanged values:
// read and compared, not rewritten), with the cache rewritten, and from
// the cache while the source fails. 200 names, as a mid-sized fleet's
// service label has.
func BenchmarkNamesFirstRead(b *testing.B) {
	ctx := context.Background()
	prom := testenv.StartPrometheus(b, testenv.PromOptions{OpenMetrics: stormData(time.Now().Truncate(15 * time.Second))})
	client, err := queries.NewClient(config.Prometheus{URL: prom.URL}, func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	names := make([]string, 200)
	for i := range names {
		names[i] = fmt.Sprintf("service-%03d", i)
	}
	up := fakeLabels{values: map[string][]string{"service": names}}
	down := fakeLabels{err: errors.New("connection refused")}
	cache := &LabelCache{Path: filepath.Join(b.TempDir(), "labels.json")}
	if err := cache.Save("service", names, time.Now()); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		src   LabelSource
		cache *LabelCache
		want  string
		stale bool // rewrite the cache each time
	}{{"prometheus-no-cache", PromLabels{Client: client}, nil, "checkout", false},
		{"memory-no-cache", up, nil, "service-150", false}, {"memory-cache-unchanged", up, cache, "service-150", false},
		{"memory-cache-rewritten", up, cache, "service-150", true}, {"down-from-cache", down, cache, "service-150", false}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if c.stale {
					b.StopTimer()
					_ = cache.Save("service", names, time.Now().Add(-time.Hour))
					b.StartTimer()
				}
				n := NewNames(config.Inventory{}, nil, c.src)
				n.Cache = c.cache
				if ok, _, _ := n.Known(ctx, ServiceName, c.want); !ok {
					b.Fatal("not known")
				}
			}
		})
	}
}
