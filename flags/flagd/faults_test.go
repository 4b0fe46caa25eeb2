package flagd_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"buf.build/gen/go/open-feature/flagd/connectrpc/go/flagd/sync/v1/syncv1connect"
	syncv1 "buf.build/gen/go/open-feature/flagd/protocolbuffers/go/flagd/sync/v1"
	"connectrpc.com/connect"
	gofd "github.com/open-feature/go-sdk-contrib/providers/flagd/pkg"
	"github.com/open-feature/go-sdk/openfeature"

	"github.com/stormctl/stormctl/flags/flagd"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lever"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestRedisLostThenBack: redis-server SIGKILLed under a running server.
// Clients keep the last snapshot; after the grace /readyz fails, /metrics
// says Redis is down and the fail-safe is served to in-process and RPC
// clients; when Redis is back a full resync reaches them.
func TestRedisLostThenBack(t *testing.T) {
	e := startEnv(t, flagd.Options{StaleAfter: 300 * time.Millisecond,
		FailSafe: map[string]any{lever.DegradedMode: "on"}})
	mgmt := "http://" + e.srv.Addr("management")
	clients := map[string]openfeature.IClient{
		"in-process": goClient(t, gofd.WithInProcessResolver(), gofd.WithPort(port(t, e.srv.Addr("sync")))),
		"rpc":        goClient(t, gofd.WithRPCResolver(), gofd.WithPort(port(t, e.srv.Addr("eval")))),
	}
	bg := context.Background()
	e.w.set(t, lever.Retries, "checkout->payments", "off", time.Hour)
	for mode, c := range clients {
		eventually(t, 5*time.Second, mode+": retries off", func() bool {
			return !c.Boolean(bg, lever.RetriesEnabled, true, ctxOf("checkout", "payments"))
		})
	}
	if code, body := get(t, mgmt+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz with Redis up = %d %s", code, body)
	}

	e.redis.Kill()
	eventually(t, 10*time.Second, "/readyz failing after the grace", func() bool {
		code, _ := get(t, mgmt+"/readyz")
		return code == http.StatusServiceUnavailable
	})
	eventually(t, 5*time.Second, "/metrics saying Redis is down and the snapshot stale", func() bool {
		_, m := get(t, mgmt+"/metrics")
		return strings.Contains(m, "stormctl_flagd_redis_up 0") && strings.Contains(m, `stale="true"`)
	})
	for mode, c := range clients {
		eventually(t, 5*time.Second, mode+": the fail-safe degraded mode while Redis is lost", func() bool {
			return c.String(bg, lever.DegradedMode, "", ctxOf("search", "")) == "on"
		})
		if c.Boolean(bg, lever.RetriesEnabled, true, ctxOf("checkout", "payments")) {
			t.Errorf("%s: lost the last snapshot's retries off while Redis is down", mode)
		}
	}

	e.redis.Restart() // no persistence: the lever is gone, as after a real data loss
	eventually(t, 10*time.Second, "/readyz back", func() bool {
		code, _ := get(t, mgmt+"/readyz")
		return code == http.StatusOK
	})
	for mode, c := range clients {
		eventually(t, 5*time.Second, mode+": the resync after recovery", func() bool {
			return c.Boolean(bg, lever.RetriesEnabled, false, ctxOf("checkout", "payments")) &&
				c.String(bg, lever.DegradedMode, "x", ctxOf("search", "")) == ""
		})
	}
}

// syncClient is a raw flagd.sync.v1 client speaking the Connect protocol
// over HTTP/1.1, one connection per stream.
func syncClient(addr string) syncv1connect.FlagSyncServiceClient {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1000}}
	return syncv1connect.NewFlagSyncServiceClient(hc, "http://"+addr)
}

// TestClientBeforeFirstSnapshot: a sync client that connects while Redis
// is down waits, is sent nothing invalid or empty, and gets the levers once
// Redis is reachable; /readyz fails until then.
func TestClientBeforeFirstSnapshot(t *testing.T) {
	rs := testenv.StartRedis(t, testenv.RedisOptions{Persist: true})
	w := newWriter(t, rs)
	w.set(t, lever.Shed, "search", "25", time.Hour)
	rs.Kill()
	e := startEnvOn(t, rs, flagd.Options{})
	if code, _ := get(t, "http://"+e.srv.Addr("management")+"/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz before the first snapshot = %d, want 503", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := make(chan string, 1)
	var streamErr error
	go func() {
		defer close(got)
		// The Connect client returns once the server answers: the server
		// answers with the first snapshot.
		stream, err := syncClient(e.srv.Addr("sync")).SyncFlags(ctx, connect.NewRequest(&syncv1.SyncFlagsRequest{ProviderId: "early"}))
		if err != nil {
			streamErr = err
			return
		}
		if stream.Receive() {
			got <- stream.Msg().GetFlagConfiguration()
		}
		streamErr = stream.Err()
	}()
	select {
	case cfg := <-got:
		t.Fatalf("sent a configuration before Redis was reached: %s", cfg)
	case <-time.After(500 * time.Millisecond):
	}
	rs.Restart()
	select {
	case cfg, ok := <-got:
		if !ok || !strings.Contains(cfg, `"25":25`) {
			t.Fatalf("first configuration after Redis came up: %q (stream err %v)", cfg, streamErr)
		}
	case <-ctx.Done():
		t.Fatal("no configuration after Redis came up")
	}
}

// TestServerRestartClientsResync: the server is shut down, a lever changes
// meanwhile, a new server starts on the same ports: in-process and RPC
// clients reconnect and see the change.
func TestServerRestartClientsResync(t *testing.T) {
	e := startEnv(t, flagd.Options{})
	clients := map[string]openfeature.IClient{
		"rpc": goClient(t, gofd.WithRPCResolver(), gofd.WithPort(port(t, e.srv.Addr("eval"))), gofd.WithRetryBackoffMaxMs(200)),
	}
	if raceBuild {
		// go-sdk-contrib providers/flagd v0.6.0 has a data race of its own on
		// reconnect (in_process/service.go:239 writes what :306 reads
		// atomically); the in-process mode is tested without -race.
		t.Log("under -race: the in-process Go provider's reconnect is left out (upstream data race)")
	} else {
		clients["in-process"] = goClient(t, gofd.WithInProcessResolver(), gofd.WithPort(port(t, e.srv.Addr("sync"))), gofd.WithRetryBackoffMaxMs(200))
	}
	bg := context.Background()
	e.w.set(t, lever.Breaker, "payments", "open", time.Hour)
	for mode, c := range clients {
		eventually(t, 5*time.Second, mode+": breaker open", func() bool {
			return c.Boolean(bg, lever.BreakerForcedOpen, false, ctxOf("checkout", "payments"))
		})
	}
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	e.w.release(t, lever.Breaker, "payments")
	e.w.set(t, lever.Shed, "checkout", "15", time.Hour)
	e2 := startEnvOn(t, e.redis, flagd.Options{SyncAddr: e.srv.Addr("sync"), EvalAddr: e.srv.Addr("eval"),
		OFREPAddr: e.srv.Addr("ofrep"), ManagementAddr: e.srv.Addr("management")})
	_ = e2
	for mode, c := range clients {
		eventually(t, 20*time.Second, mode+": the change made while the server was down", func() bool {
			return !c.Boolean(bg, lever.BreakerForcedOpen, true, ctxOf("checkout", "payments")) &&
				c.Int(bg, lever.ShedPercent, -1, ctxOf("checkout", "")) == 15
		})
	}
}
