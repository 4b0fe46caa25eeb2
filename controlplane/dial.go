package controlplane

import (
	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/internal/config"
)

// Dial builds the Redis client of cfg without contacting the server, for
// long-running readers (the flagd server) that must start, and serve their
// clients, while Redis is still unreachable. It returns the URL without its
// password, for messages.
func Dial(cfg config.Redis, getenv func(string) string) (redis.UniversalClient, string, error) {
	ep, err := parseEndpoint(cfg, getenv)
	if err != nil {
		return nil, "", err
	}
	return redis.NewUniversalClient(ep.opts), ep.display, nil
}
