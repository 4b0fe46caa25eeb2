package actions

import (
	"context"
	"iter"
	"time"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// The guards reach the world only through these interfaces, so their logic
// can be tested with fakes and run against real servers alike.

// Evidence measures a saved query for a target now.
type Evidence interface {
	// Measure evaluates saved query id for t. Status is "ok", "warn",
	// "crit" or "no data"; an error (Prometheus unreachable, a pack that
	// cannot answer) means no evidence from this query.
	Measure(ctx context.Context, id string, t Target) (journal.Evidence, error)
}

// NameRole says what a name in a target is.
type NameRole string

// Name roles.
const (
	ServiceName    NameRole = "service"
	DependencyName NameRole = "dependency"
)

// inventoryKey is the context's inventory list that holds names of role r.
func (r NameRole) inventoryKey() string {
	if r == DependencyName {
		return "inventory.dependencies"
	}
	return "inventory.services"
}

// Inventory knows which services and dependencies exist.
type Inventory interface {
	// Known says whether name is a known service or dependency, and if not
	// which known names are close. An error means it could not find out.
	Known(ctx context.Context, role NameRole, name string) (known bool, suggestions []string, err error)
}

// Clock tells the time.
type Clock interface{ Now() time.Time }

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Confirmer asks a person at a terminal to confirm by typing want.
type Confirmer interface {
	Confirm(ctx context.Context, prompt, want string) (bool, error)
}

// Journal records entries; *journal.Writer is one (it falls back to the
// local pending file when the control plane is unreachable).
type Journal interface {
	Append(ctx context.Context, e journal.Entry) (sealed journal.Entry, local bool, err error)
}

// ControlPlane is what actions need from the control plane;
// *controlplane.Store implements it against Redis.
type ControlPlane interface {
	Get(ctx context.Context, kind lever.Kind, target string) (*lever.Lever, int64, string, error)
	Levers(ctx context.Context) ([]lever.Lever, error)
	Apply(ctx context.Context, r controlplane.ApplyRequest) (controlplane.Result, error)
	Release(ctx context.Context, r controlplane.ReleaseRequest) (controlplane.Result, error)
	Extend(ctx context.Context, r controlplane.ExtendRequest) (controlplane.Result, error)
	// Snapshot reads everything a guarded action checks before it writes,
	// in one round trip.
	Snapshot(ctx context.Context, r controlplane.SnapshotRequest) (*controlplane.Snapshot, error)
	SwapRecord(ctx context.Context, collection, id, old, value string, e journal.Entry) (journal.Entry, error)
	Record(ctx context.Context, collection, id string) (string, error)
	Records(ctx context.Context, collection string) (map[string]string, error)
	// Journal streams the journal, for listings of ended actions.
	Journal(ctx context.Context) iter.Seq2[journal.Entry, error]
	// Identity is who Redis says we are, and whether that binds the
	// actor; the two-person rule compares it.
	Identity(ctx context.Context) (controlplane.Identity, error)
}

var _ ControlPlane = storeAdapter{}

// storeAdapter adds the journal reader to a *controlplane.Store.
type storeAdapter struct{ *controlplane.Store }

func (s storeAdapter) Journal(ctx context.Context) iter.Seq2[journal.Entry, error] {
	return journal.Entries(s.Store.Journal().Range(ctx, "-", "+"))
}

// FromStore adapts a store to ControlPlane.
func FromStore(s *controlplane.Store) ControlPlane { return storeAdapter{s} }
