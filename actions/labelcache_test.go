package actions

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/config"
)

func TestNamesFallBackToCachedLabels(t *testing.T) {
	ctx := context.Background()
	cache := &LabelCache{Path: filepath.Join(t.TempDir(), "ctx", "labels.json")}
	up := fakeLabels{values: map[string][]string{"service": {"checkout", "ledger"}}}
	live := NewNames(config.Inventory{}, nil, up)
	live.Cache = cache
	if ok, _, err := live.Known(ctx, ServiceName, "checkout"); !ok || err != nil {
		t.Fatalf("live read: %v %v", ok, err)
	}

	down := NewNames(config.Inventory{}, nil, fakeLabels{err: errors.New("connection refused")})
	down.Cache = cache
	ok, _, err := down.Known(ctx, ServiceName, "ledger")
	var stale *StaleNamesError
	if !ok || !errors.As(err, &stale) || stale.ReadAt.IsZero() {
		t.Fatalf("a cached name is known, with a stale note: %v %v", ok, err)
	}
	ok, near, err := down.Known(ctx, ServiceName, "ledgr")
	if ok || !errors.As(err, &stale) || len(near) != 1 || near[0] != "ledger" {
		t.Fatalf("an uncached name is unconfirmed, with suggestions from the cache: %v %v %v", ok, near, err)
	}

	// A corrupt cache is neither trusted nor fatal, and the next good read replaces it.
	if err := os.WriteFile(cache.Path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	down = NewNames(config.Inventory{}, nil, fakeLabels{err: errors.New("connection refused")})
	down.Cache = cache
	if ok, _, err := down.Known(ctx, ServiceName, "ledger"); ok || !errors.As(err, &stale) || !stale.ReadAt.IsZero() ||
		!strings.Contains(err.Error(), "the label cache cannot be used: "+cache.Path+":1:2: invalid character 'n'") {
		t.Fatalf("corrupt cache: %v %v", ok, err)
	}
	live = NewNames(config.Inventory{}, nil, up)
	live.Cache = cache
	_, _, _ = live.Known(ctx, ServiceName, "checkout")
	if c, ok, err := cache.Load("service"); !ok || err != nil || len(c.Values) != 2 {
		t.Fatalf("cache not rewritten: %+v %v %v", c, ok, err)
	}
}

// Suggestions come from label values, which are untrusted: one that could
// not be a target (here an escape sequence) is never suggested.
func TestSuggestionsAreValidNames(t *testing.T) {
	ctx := context.Background()
	cp := newFakeCP()
	w := world(cp, config.Policy{})
	w.Inventory = NewNames(config.Inventory{}, nil, fakeLabels{values: map[string][]string{
		"service": {"checkout", "checkou\x1b]0;pwned\x07"}, "dependency": {"payments"}}})
	spec := okSpec()
	spec.Target = "checkou->payments"
	_, err := w.Apply(ctx, spec)
	var ref *RefusedError
	if !errors.As(err, &ref) || ref.Guard != GuardValidation || !strings.Contains(ref.Hint, "did you mean checkout?") || strings.ContainsRune(err.Error(), 0x1b) {
		t.Fatalf("%v", err)
	}
}
