//go:build !race

package flagd_test

// raceBuild: the test binary runs under the race detector.
const raceBuild = false
