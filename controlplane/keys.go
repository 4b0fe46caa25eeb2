package controlplane

// Keys added to the schema of schema.go for the control plane's own
// bookkeeping; readers of levers (flags/) never need them.

// Held is a hash member → the JSON of the lever last written. It outlives
// the lever key's expiry so that the reaper can journal what expired, and
// is cleared when the member is reaped or released.
func (k Keys) Held() string { return k.Prefix() + "held" }

// Idempotency holds the first result of an apply made with idempotency key
// key, so a retried apply returns it and changes nothing.
func (k Keys) Idempotency(key string) string { return k.Prefix() + "idem:" + key }

// Synced is a set of the ids of entries appended by `journal sync` from a
// local pending file, so that each is appended exactly once even when a
// sync is interrupted and run again.
func (k Keys) Synced() string { return k.Prefix() + "journal:synced" }

// Actor is the key that binds writes to their actor: every script that
// journals an entry also sets it, to the stream id of the actor's last
// entry. A per-person Redis user may write only its own actor's key (see
// ACLRules), so a client that claims another actor fails inside Redis. The
// empty actor has the key "actor:", which only shared users may write.
func (k Keys) Actor(actor string) string { return k.Prefix() + "actor:" + actor }

// ActorRate is the actor's rate-limit counter, also bound to the actor.
func (k Keys) ActorRate(actor string) string { return k.Rate("actor:" + actor) }

// OverallRate is everyone's rate-limit counter.
func (k Keys) OverallRate() string { return k.Rate("*") }
