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
