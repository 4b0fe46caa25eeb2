// Package controlplane writes stormctl's shared state in Redis: the Lua
// scripts that change levers atomically (version check, lever, expiry,
// journal append, publish, idempotency, rate limits), the reaping of
// expired levers, the change feed and the acknowledgement count. The lever
// schema it writes is package lever's; it knows nothing about PromQL.
package controlplane

import "github.com/stormctl/stormctl/lever"

// Keys names every Redis key of one control-plane namespace: the read-side
// layout of lever.Keys plus the control plane's own bookkeeping.
type Keys struct {
	lever.Keys
}

// NewKeys returns the key schema for namespace ("" means
// lever.DefaultNamespace).
func NewKeys(namespace string) Keys { return Keys{lever.NewKeys(namespace)} }

// Journal is the Redis stream of journal entries.
func (k Keys) Journal() string { return k.Prefix() + "journal" }

// JournalHead holds the hash of the last journal entry (the chain head).
func (k Keys) JournalHead() string { return k.Prefix() + "journal:head" }
