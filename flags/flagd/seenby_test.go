package flagd_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	syncv1 "buf.build/gen/go/open-feature/flagd/protocolbuffers/go/flagd/sync/v1"
	"connectrpc.com/connect"

	"github.com/stormctl/stormctl/flags/flagd"
	"github.com/stormctl/stormctl/lever"
)

// TestPlainStreamsAreNotSeenBy: 50 sync streams that name no provider get
// the levers but are not counted in "seen by"; streams with a provider id
// or a selector, as flagd's providers send them, are.
func TestPlainStreamsAreNotSeenBy(t *testing.T) {
	e := startEnv(t, flagd.Options{})
	e.w.set(t, lever.Retries, "checkout->payments", "off", time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	client := syncClient(e.srv.Addr("sync"))
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	got := make(chan struct{}, 64)
	open := func(providerID, selector string) {
		req := connect.NewRequest(&syncv1.SyncFlagsRequest{ProviderId: providerID})
		if selector != "" {
			req.Header().Set(flagd.SelectorHeader, selector)
		}
		st, err := client.SyncFlags(ctx, req)
		if err != nil {
			t.Error(err)
			return
		}
		wg.Go(func() {
			defer st.Close()
			if st.Receive() && strings.Contains(st.Msg().GetFlagConfiguration(), "stormctl.retries.enabled") {
				got <- struct{}{}
			}
			for st.Receive() {
			}
		})
	}
	for range 50 {
		open("", "")
	}
	open("checkout-7f9c", "")
	open("", "service=checkout")
	for range 52 {
		select {
		case <-got:
		case <-time.After(20 * time.Second):
			t.Fatal("not every stream was sent the levers")
		}
	}
	keys := lever.NewKeys("")
	counted := func() []string {
		ids, err := e.client.ZRange(context.Background(), keys.Instances(), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, id := range ids {
			if strings.Contains(id, "/sync/") {
				out = append(out, id)
			}
		}
		return out
	}
	eventually(t, 10*time.Second, "both identified streams acknowledge", func() bool { return len(counted()) >= 2 })
	time.Sleep(3 * time.Second) // a further beat: the plain streams had every chance
	if ids := counted(); len(ids) != 2 {
		t.Fatalf("%d sync instances acknowledge, want 2 (the provider id and the selector): %q", len(ids), ids)
	}
}
