//go:build !race

package alertloop

const raceEnabled = false
