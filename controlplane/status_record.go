package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ComponentStatus is what a long-running reader of levers (an actuator)
// reports about itself for `stormctl status`: its problems, such as an
// actuation the cluster refused. It expires unless rewritten, so a stopped
// component's report disappears instead of going stale.
type ComponentStatus struct {
	Component string    `json:"component"` // "actuator:kubernetes"
	Instance  string    `json:"instance"`
	Time      time.Time `json:"time"`
	Problems  []string  `json:"problems,omitempty"`
	// Holds counts, by lever member and object kind, the objects the
	// component holds changed ("retries:checkout->payments" → "httproute" → 2).
	Holds map[string]map[string]int `json:"holds,omitempty"`
}

// Status is the key of one component's status report.
func (k Keys) Status(component string) string { return k.Prefix() + "status:" + component }

// SetStatus writes a component's report with a TTL.
func (s *Store) SetStatus(ctx context.Context, st ComponentStatus, ttl time.Duration) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := s.client.Set(ctx, s.keys.Status(st.Component), b, ttl).Err(); err != nil {
		return s.classify("write "+st.Component+" status", err, true)
	}
	return nil
}

// Statuses reads the reports of the given components (absent ones are
// skipped), in the order given.
func (s *Store) Statuses(ctx context.Context, components ...string) ([]ComponentStatus, error) {
	if len(components) == 0 {
		return nil, nil
	}
	keys := make([]string, len(components))
	for i, c := range components {
		keys[i] = s.keys.Status(c)
	}
	vals, err := s.client.MGet(ctx, keys...).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, s.classify("read component status", err, false)
	}
	var out []ComponentStatus
	for i, v := range vals {
		str, ok := v.(string)
		if !ok {
			continue
		}
		var st ComponentStatus
		if err := json.Unmarshal([]byte(str), &st); err != nil {
			return nil, fmt.Errorf("status of %s: %w", components[i], err)
		}
		st.Problems = slices.DeleteFunc(st.Problems, func(p string) bool { return strings.TrimSpace(p) == "" })
		out = append(out, st)
	}
	return out, nil
}
