package actions

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/stormctl/stormctl/internal/atomicfile"
	"github.com/stormctl/stormctl/internal/yamlfile"
)

// LabelCache keeps the label values last read from Prometheus in a local
// file, so that the inventory still knows names while Prometheus is down —
// often exactly when a responder needs to act.
type LabelCache struct {
	Path string
}

// cachedLabels is the file's content: label name → values as last read.
type cachedLabels map[string]CachedValues

// CachedValues are one label's values and when they were read.
type CachedValues struct {
	Values []string  `json:"values"`
	ReadAt time.Time `json:"read_at"`
}

// refreshAfter is how old a cached read may get before an identical read
// rewrites it: rewriting costs a file write per process, and the time
// shown while Prometheus is down need not be exact to the second.
const refreshAfter = 5 * time.Minute

// Save records the values of label read at t. The file is replaced
// atomically, so a reader never sees half of it.
func (c *LabelCache) Save(label string, values []string, t time.Time) error {
	all, err := c.load()
	if err != nil {
		all = cachedLabels{} // a corrupt cache is replaced, not trusted
	}
	if old, ok := all[label]; ok && slices.Equal(old.Values, values) && t.Sub(old.ReadAt) < refreshAfter && !t.Before(old.ReadAt) {
		return nil
	}
	all[label] = CachedValues{Values: values, ReadAt: t.UTC()}
	data, err := json.Marshal(all)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(c.Path), 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(c.Path, data, 0o600)
}

// Load returns the cached values of label; ok is false when there are
// none. err says why a cache file there could not be used (too large, too
// deep, not stormctl's JSON), at its file:line:col.
func (c *LabelCache) Load(label string) (v CachedValues, ok bool, err error) {
	all, err := c.load()
	if err != nil {
		return CachedValues{}, false, err
	}
	v, ok = all[label]
	return v, ok, nil
}

// cacheLimits bound the cache file read: it holds the values of a few
// labels, each list capped as Prometheus' answers are (prometheus.limits),
// so anything larger is not stormctl's and is replaced.
func cacheLimits() yamlfile.Limits {
	lim := yamlfile.DefaultLimits()
	lim.MaxBytes = max(lim.MaxBytes, 64<<20)
	return lim
}

func (c *LabelCache) load() (cachedLabels, error) {
	lim := cacheLimits()
	data, err := yamlfile.ReadFile(c.Path, lim)
	if errors.Is(err, fs.ErrNotExist) {
		return cachedLabels{}, nil
	}
	all := cachedLabels{}
	if err == nil {
		err = yamlfile.DecodeJSON(c.Path, data, &all, lim)
	}
	if err != nil {
		return nil, err
	}
	return all, nil
}

// StaleNamesError says that the live inventory could not be read and the
// names came from the local cache instead (or there was no cache).
type StaleNamesError struct {
	Err    error     // why the live read failed
	ReadAt time.Time // when the cached values were read; zero without a cache
	// CacheErr is why the cache file could not be used, if it could not.
	CacheErr error
}

func (e *StaleNamesError) Error() string {
	if e.CacheErr != nil {
		return fmt.Sprintf("%v, and the label cache cannot be used: %v", e.Err, e.CacheErr)
	}
	if e.ReadAt.IsZero() {
		return fmt.Sprintf("%v, and no label values are cached", e.Err)
	}
	return fmt.Sprintf("%v (label values last read at %s)", e.Err, e.ReadAt.Format(time.RFC3339))
}

func (e *StaleNamesError) Unwrap() error { return e.Err }
