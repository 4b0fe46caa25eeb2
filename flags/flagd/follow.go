package flagd

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/open-feature/go-sdk/openfeature"

	"github.com/stormctl/stormctl/flags"
	"github.com/stormctl/stormctl/lever"
)

// Follow starts p and calls fn with the lever state after the first full
// read of Redis and again on every provider event (a change, an expiry,
// Redis lost or back) and every safety interval, until ctx ends. fn runs on
// one goroutine; states before the first read are not passed.
func Follow(ctx context.Context, p *flags.Provider, failSafe map[string]any, every time.Duration, fn func(Input)) {
	initDone := make(chan struct{})
	go func() {
		defer close(initDone)
		_ = p.InitWithContext(ctx, openfeature.EvaluationContext{})
	}()
	tick := time.NewTicker(every)
	defer tick.Stop()
	events := p.EventChannel()
	for {
		select {
		case <-ctx.Done():
			return
		case <-initDone:
			initDone = nil
		case <-events:
		case <-tick.C:
		}
		if st := p.State(); st.Synced {
			fn(Input{Levers: st.Levers, Stale: st.Stale, FailSafe: failSafe, Versions: st.Versions})
		}
	}
}

// ParseFailSafe reads "KEY=VALUE" for a flag of the contract, VALUE in the
// flag's type: e.g. "stormctl.degraded.mode=on", "stormctl.shed.percent=20".
func ParseFailSafe(s string) (string, any, error) {
	key, val, ok := strings.Cut(s, "=")
	if !ok {
		return "", nil, fmt.Errorf("fail-safe %q: want FLAG=VALUE", s)
	}
	f, ok := lever.Lookup(key)
	if !ok {
		return "", nil, fmt.Errorf("fail-safe %q: unknown flag %q", s, key)
	}
	switch f.Type {
	case lever.Bool:
		b, err := strconv.ParseBool(val)
		if err != nil {
			return "", nil, fmt.Errorf("fail-safe %q: %s is a bool", s, key)
		}
		return key, b, nil
	case lever.Int:
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			return "", nil, fmt.Errorf("fail-safe %q: %s is an integer", s, key)
		}
		return key, n, nil
	}
	return key, val, nil
}
