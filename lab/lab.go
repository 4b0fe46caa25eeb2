package lab

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/flags"
	"github.com/stormctl/stormctl/lab/promapi"
	"github.com/stormctl/stormctl/lab/sim"
)

// Options configure a lab.
type Options struct {
	Scenario *sim.Scenario
	Seed     uint64
	Until    time.Duration // zero: the scenario's duration
	Speed    float64       // 0 as fast as possible, 1 real time, N N× real time
	// Redis is the control plane the fleet reads its levers from, through
	// a flags.Provider in an isolated OpenFeature API, in Namespace. Nil
	// reads Levers instead (nil: none).
	Redis     redis.UniversalClient
	Namespace string
	Levers    sim.Levers
	// Events are lever changes at simulated times. Without Redis the
	// simulation applies them itself; with Redis, Run pulls them through
	// the control plane with Lab.Actions.
	Events []sim.LeverEvent
	// Epoch is the wall time of simulated time zero; zero picks one so
	// that no sample is stamped ahead of the wall clock (see epochFor).
	Epoch time.Time
}

// Lab is a simulated fleet with its embedded Prometheus.
type Lab struct {
	DB    *promapi.DB
	Sim   *sim.Sim
	Epoch time.Time
	// Actions pulls Events through the control plane; set it before Run.
	Actions *Actions
	// Pulls records what became of each event pulled through Actions.
	Pulls []Pull

	until   time.Duration
	speed   float64
	started time.Time
	simp    atomic.Pointer[sim.Sim] // for leverNow, read by the provider's goroutines
	levers  *fleetLevers
	events  []sim.LeverEvent
}

// New opens the sample store, connects to the control plane if any and builds the
// fleet.
func New(opts Options) (*Lab, error) {
	until := opts.Until
	if until == 0 {
		until = opts.Scenario.Duration.D()
	}
	now := time.Now()
	l := &Lab{Epoch: opts.Epoch, until: until, speed: opts.Speed, started: now}
	if l.Epoch.IsZero() {
		l.Epoch = epochFor(now, until, opts.Speed)
	}
	db, err := promapi.Open(promapi.Options{})
	if err != nil {
		return nil, err
	}
	levers, events := opts.Levers, opts.Events
	if opts.Redis != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*flags.DefaultStaleAfter+DefaultSettleTimeout)
		l.levers, err = openLevers(ctx, opts.Redis, flags.Namespace(opts.Namespace), flags.Clock(l.leverNow))
		cancel()
		if err != nil {
			db.Close()
			return nil, err
		}
		levers, events, l.events = l.levers.simLevers(), nil, opts.Events
	}
	s, err := sim.New(opts.Scenario, sim.Options{Seed: opts.Seed, Until: until, Epoch: l.Epoch, Speed: opts.Speed,
		Start: now, Store: simStore{db.Store}, Levers: levers, Events: events})
	if err != nil {
		l.closeLevers()
		db.Close()
		return nil, err
	}
	l.DB, l.Sim = db, s
	l.simp.Store(s)
	return l, nil
}

// Now is the lab's present: the wall time stamped on the newest samples.
// The served API evaluates instant queries that name no time at Now.
func (l *Lab) Now() time.Time { return l.Epoch.Add(l.Sim.Now()) }

// leverNow is the clock levers live by: the fleet's provider judges expiry
// by it (flags.Clock) and Actions stamps levers with it. In a paced run it
// is the wall clock. In a max-speed run it is the wall time a real-time run
// started with this one would have reached: it stays ahead of the wall
// clock, so the control plane accepts the expiries, and a lever pulled at
// simulated time t with TTL d expires at t+d of simulated time, as it
// would in real time.
func (l *Lab) leverNow() time.Time {
	s := l.simp.Load()
	if l.speed > 0 || s == nil {
		return time.Now()
	}
	return l.started.Add(s.Now())
}

// Handler serves the Prometheus API and the simulation's /metrics.
func (l *Lab) Handler() http.Handler {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		if err := l.Sim.WriteMetrics(w); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	return atLabNow(l.Now, promapi.Mux(l.DB.Handler(), metrics))
}

// Run simulates to the end (or until ctx ends), stopping at each event to
// pull it through Actions when the lab reads a control plane.
func (l *Lab) Run(ctx context.Context) error {
	if len(l.events) > 0 && l.Actions == nil {
		return errors.New("lab: events on a control plane are pulled through actions: set Lab.Actions")
	}
	for len(l.events) > 0 {
		e := l.events[0]
		if e.At.D() > l.until {
			break
		}
		if err := l.Sim.RunTo(ctx, e.At.D()); err != nil {
			return err
		}
		l.events = l.events[1:]
		l.Pulls = append(l.Pulls, l.pull(ctx, e))
	}
	return l.Sim.Run(ctx)
}

// Close disconnects from the control plane and closes the PromQL engine.
func (l *Lab) Close() error {
	err := l.closeLevers()
	if cerr := l.DB.Close(); err == nil {
		err = cerr
	}
	return err
}

func (l *Lab) closeLevers() error {
	if l.levers == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return l.levers.close(ctx)
}

// simStore hands the simulation the store's transactions.
type simStore struct{ *promapi.Store }

func (s simStore) Appender(ctx context.Context) sim.Appender { return s.Store.Appender(ctx) }
