// Package flags is the OpenFeature provider that serves stormctl's flag
// contract (lever.Table) to Go services: they read the levers written by the
// control plane through an OpenFeature client, and learn of every change
// within milliseconds over Redis pub/sub. The package never writes levers.
package flags

import "github.com/stormctl/stormctl/lever"

// The flag keys of the contract, as lever defines them, so service code
// names them from the package it evaluates them with.
const (
	RetriesEnabled     = lever.RetriesEnabled
	RetriesMaxAttempts = lever.RetriesMaxAttempts
	BreakerForcedOpen  = lever.BreakerForcedOpen
	AutoscalingFrozen  = lever.AutoscalingFrozen
	DegradedMode       = lever.DegradedMode
	ShedPercent        = lever.ShedPercent
)
