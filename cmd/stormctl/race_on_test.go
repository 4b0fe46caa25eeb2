//go:build race

package main

// raceEnabled: the race detector multiplies memory and CPU several times,
// so resource bounds are checked only without it.
const raceEnabled = true
