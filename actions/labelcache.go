package actions

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/stormctl/stormctl/internal/atomicfile"
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

// Load returns the cached values of label; ok is false when there are none.
func (c *LabelCache) Load(label string) (CachedValues, bool) {
	all, err := c.load()
	if err != nil {
		return CachedValues{}, false
	}
	v, ok := all[label]
	return v, ok
}

// maxCacheBytes bounds the cache file read: it holds at most a few capped
// label value lists, so anything larger is not stormctl's and is replaced.
const maxCacheBytes = 64 << 20

func (c *LabelCache) load() (cachedLabels, error) {
	f, err := os.Open(c.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return cachedLabels{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCacheBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxCacheBytes {
		return nil, fmt.Errorf("label cache %s: larger than %d MiB", c.Path, maxCacheBytes>>20)
	}
	all := cachedLabels{}
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, fmt.Errorf("label cache %s: %w", c.Path, err)
	}
	return all, nil
}

// StaleNamesError says that the live inventory could not be read and the
// names came from the local cache instead (or there was no cache).
type StaleNamesError struct {
	Err    error     // why the live read failed
	ReadAt time.Time // when the cached values were read; zero without a cache
}

func (e *StaleNamesError) Error() string {
	if e.ReadAt.IsZero() {
		return fmt.Sprintf("%v, and no label values are cached", e.Err)
	}
	return fmt.Sprintf("%v (label values last read at %s)", e.Err, e.ReadAt.Format(time.RFC3339))
}

func (e *StaleNamesError) Unwrap() error { return e.Err }
