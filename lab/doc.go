// Package lab runs a storm scenario (lab/sim) into an in-memory sample store
// under Prometheus's PromQL engine (lab/promapi), serves the Prometheus HTTP
// API and /metrics over it, connects the simulated fleet to a control plane,
// and summarises the run with the saved queries of queries/.
//
// # Levers
//
// With Options.Redis the fleet reads its levers as a real service does: one
// flags.Provider in an isolated OpenFeature API (the fleet is one process,
// one acknowledging instance), read through resilience.Levers once per
// scrape interval. The control plane is any Redis: a real one, or
// EmbeddedRedis for zero set-up. A lever pulled from another terminal
// reaches the provider by pub/sub within milliseconds and the simulation at
// its next scrape interval; its effect is in the samples one interval later.
//
// Scheduled events (Options.Events) are pulled through the control plane by
// Lab.Actions: actions.Service with every guard (evidence and inventory from
// the lab's own API), the journal, and Settle, which stops the simulation at
// the event's time until the provider serves the change. A lever pulled at
// simulated time t therefore takes effect at exactly t, whatever the wall
// clock did meanwhile, and runs are deterministic for a seed.
//
// # Time
//
// Samples are stamped Epoch + simulated time and never ahead of the wall
// clock: a real-time run starts now, a run at N× real time starts
// until·(1−1/N) in the past, a max-speed run ends now. The API evaluates an
// instant query that names no time at Lab.Now, the simulated present.
// /metrics serves the last scrape interval's samples with their own
// timestamps, so a real Prometheus scraping it holds the lab's samples.
//
// Levers live by their own clock (the provider's flags.Clock, and the clock
// Actions stamps levers with). In a paced run it is the wall clock: a
// lever's TTL is wall time, so at N× real time it lasts N times as much
// simulated time, as an operator at the lab would expect. In a max-speed
// run it is the wall time a real-time run started with this one would have
// reached: a lever pulled at simulated time t with TTL d expires at t+d of
// simulated time, exactly as in real time. That clock runs ahead of the wall
// clock, so the control plane accepts the expiries and keeps such a lever
// (for `stormctl status`) until that wall time. A lever pulled by hand
// during a max-speed run (which lasts seconds) is judged by the same clock.
package lab
