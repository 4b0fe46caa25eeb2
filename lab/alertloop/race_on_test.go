//go:build race

package alertloop

// raceEnabled: under the race detector the simulation runs several times
// slower, so the proof runs its headline scenario only.
const raceEnabled = true
