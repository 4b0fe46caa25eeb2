// Package labtest helps the tests of packages that must behave the same on
// the lab's embedded server as in production.
package labtest

import (
	"testing"

	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lab"
)

// Backend is a Redis-protocol server a test can run against.
type Backend struct {
	Name string
	// Start starts a server for the test and returns its address; it stops
	// when the test ends.
	Start func(t testing.TB) string
}

// RedisBackends are redis-server, as in production, and the lab's embedded
// server (miniredis with wall-clock expiry), as in `stormctl demo`.
func RedisBackends() []Backend {
	return []Backend{
		{"redis-server", func(t testing.TB) string { return testenv.StartRedis(t, testenv.RedisOptions{}).Addr }},
		{"embedded", func(t testing.TB) string {
			t.Helper()
			e, err := lab.StartEmbeddedRedis("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(e.Close)
			return e.Addr
		}},
	}
}
