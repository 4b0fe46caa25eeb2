package lab

import (
	"context"
	"fmt"
	"time"

	"github.com/open-feature/go-sdk/openfeature"
	"github.com/open-feature/go-sdk/openfeature/isolated"
	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/flags"
	"github.com/stormctl/stormctl/lab/sim"
	"github.com/stormctl/stormctl/lever"
)

// settlePoll is how often Settle asks the provider what it serves.
const settlePoll = time.Millisecond

// DefaultSettleTimeout bounds Settle: pushes arrive in milliseconds, and the
// provider's full resync repairs a lost one within its interval.
const DefaultSettleTimeout = 10 * time.Second

// fleetLevers is the fleet's view of a control plane: one flags.Provider
// (the fleet is one process) in an isolated OpenFeature API, read by the
// simulated services once per scrape interval as resilience.Levers reads
// it in a real service.
type fleetLevers struct {
	provider *flags.Provider
	api      *openfeature.EvaluationAPI
	client   *openfeature.Client
}

func openLevers(ctx context.Context, rc redis.UniversalClient, opts ...flags.Option) (*fleetLevers, error) {
	p := flags.NewProvider(rc, opts...)
	api := isolated.NewAPI()
	if err := api.SetProviderAndWait(ctx, p); err != nil {
		_ = api.Shutdown(context.Background())
		return nil, fmt.Errorf("lab levers: %w", err)
	}
	return &fleetLevers{provider: p, api: api, client: api.NewClient()}, nil
}

func (f *fleetLevers) close(ctx context.Context) error { return f.api.Shutdown(ctx) }

// served reports the version of the lever (kind, target) the provider
// serves, and whether it serves one: evaluated through OpenFeature exactly
// for that target, so a more general lever does not answer for it.
func (f *fleetLevers) served(ctx context.Context, kind lever.Kind, target string) (int64, bool) {
	sc := lever.ScopeOf(kind, target)
	ec := openfeature.NewTargetlessEvaluationContext(map[string]any{flags.AttrService: sc.Service, flags.AttrDependency: sc.Dependency})
	fl := lever.FlagsOf(kind)[0]
	key := fl.Key
	var d openfeature.EvaluationDetails
	switch fl.Type {
	case lever.Bool:
		r, _ := f.client.BooleanValueDetails(ctx, key, false, ec)
		d = r.EvaluationDetails
	case lever.Int:
		r, _ := f.client.IntValueDetails(ctx, key, 0, ec)
		d = r.EvaluationDetails
	default:
		r, _ := f.client.StringValueDetails(ctx, key, "", ec)
		d = r.EvaluationDetails
	}
	if t, _ := d.FlagMetadata.GetString("target"); t != target {
		return 0, false
	}
	v, err := d.FlagMetadata.GetInt("version")
	return v, err == nil
}

// Settle waits until the fleet's provider serves version of the lever
// (kind, target), or its absence when present is false, and makes the
// simulated services read it at once: a lever pulled while the simulation
// is stopped at time t takes effect at exactly t, whatever the wall clock
// did meanwhile. A lab without a control plane has nothing to wait for.
func (l *Lab) Settle(ctx context.Context, kind lever.Kind, target string, version int64, present bool) error {
	if l.levers == nil {
		return fmt.Errorf("lab settle %s: the lab reads no control plane", lever.Member(kind, target))
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultSettleTimeout)
	defer cancel()
	t := time.NewTicker(settlePoll)
	defer t.Stop()
	for {
		v, ok := l.levers.served(ctx, kind, target)
		if ok == present && (!present || v >= version) {
			l.Sim.RefreshLevers()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("lab settle %s version %d: the provider serves version %d (present %v): %w", lever.
				Member(kind, target), version, v, ok, ctx.Err())
		case <-t.C:
		}
	}
}

// simLevers adapts the fleet's OpenFeature client to the simulation.
func (f *fleetLevers) simLevers() sim.Levers { return &sim.FlagLevers{Client: f.client} }
