package main

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/journal"
)

// storeDeps is the lazily opened control plane of one run.
type storeDeps struct {
	once  sync.Once
	store *controlplane.Store
	err   error
}

var quietRedisOnce sync.Once

// quietLogger drops go-redis's own log lines (one per failed dial): stormctl
// reports an unreachable server once, as a clear error.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// Store opens the control plane of the current context on first use and
// returns the same store for the rest of the run. An unreachable server is
// an error matching controlplane.ErrUnavailable.
func (f *Factory) Store(ctx context.Context) (*controlplane.Store, error) {
	deps := &f.store
	deps.once.Do(func() {
		cfg, err := f.Config()
		if err != nil {
			deps.err = err
			return
		}
		signer, err := f.Signer()
		if err != nil {
			deps.err = err
			return
		}
		quietRedisOnce.Do(func() { redis.SetLogger(quietLogger{}) })
		deps.store, deps.err = controlplane.Open(ctx, cfg.Redis, f.getenv)
		if deps.err == nil {
			deps.store.SetSigner(signer)
			deps.store.SetWritten(deps.store.WrittenPath(f.getenv))
		}
	})
	return deps.store, deps.err
}

// signerDeps is the journal signing key of one run, loaded once.
type signerDeps struct {
	once   sync.Once
	signer journal.Signer
	err    error
}

// Signer loads the key that signs this run's journal entries and
// checkpoints once; nil when none is configured and no ssh-agent key is
// available. A configured key that cannot be used is a usage error, so
// nothing is written unsigned by mistake.
func (f *Factory) Signer() (journal.Signer, error) {
	d := &f.sign
	d.once.Do(func() {
		cfg, err := f.Config()
		if err != nil {
			d.err = err
			return
		}
		d.signer, err = journal.LoadSigner(cfg.Journal.SigningKey, f.getenv)
		d.err = exit.NewUsage(err)
	})
	return d.signer, d.err
}

// PendingPath is the local journal file used while Redis is unreachable
// (STORMCTL_JOURNAL_PENDING, else under $XDG_STATE_HOME/stormctl).
func (f *Factory) PendingPath() string { return journal.DefaultPendingPath(f.getenv) }
