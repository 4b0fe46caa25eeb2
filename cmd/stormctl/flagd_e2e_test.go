package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gofd "github.com/open-feature/go-sdk-contrib/providers/flagd/pkg"
	"github.com/open-feature/go-sdk/openfeature"
	"github.com/open-feature/go-sdk/openfeature/isolated"

	"github.com/stormctl/stormctl/flags/flagd"
	"github.com/stormctl/stormctl/internal/iostreams"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lever"
)

// flagdEnv is a real Prometheus (the evidence), a real redis-server and
// `stormctl flagd serve` run through Main on loopback ports.
type flagdEnv struct {
	srv       *flagd.Server
	stop      func()
	redisAddr string
}

func startFlagdServe(t testing.TB, extra ...string) *flagdEnv {
	t.Helper()
	return startFlagdServeWith(t, "redis: {namespace: fd}", extra...)
}

// startFlagdServeWith runs flagd serve with the config context ctxYAML
// (indented under the context name).
func startFlagdServeWith(t testing.TB, ctxYAML string, extra ...string) *flagdEnv {
	t.Helper()
	prom := testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: stormFixture(fixtureEnd())})
	rs := testenv.StartRedis(t, testenv.RedisOptions{})
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	body := "contexts:\n  t:\n    " + strings.ReplaceAll(ctxYAML, "\n", "\n    ") + "\ncurrent-context: t\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STORMCTL_CONFIG", cfg)
	t.Setenv("STORMCTL_PROMETHEUS_URL", prom.URL)
	t.Setenv("STORMCTL_REDIS_URL", rs.URL("", ""))
	t.Setenv("STORMCTL_ACTOR", "alice")
	t.Setenv("XDG_STATE_HOME", t.TempDir())

	e := &flagdEnv{redisAddr: rs.Addr}
	e.srv, e.stop = serveThroughMain(t, append([]string{"--sync-addr", "127.0.0.1:0", "--eval-addr", "127.0.0.1:0",
		"--ofrep-addr", "127.0.0.1:0", "--management-addr", "127.0.0.1:0"}, extra...)...)
	return e
}

// serveThroughMain runs `stormctl flagd serve args...` through Main until the
// returned function (or the test's end) stops it as SIGTERM would.
func serveThroughMain(t testing.TB, args ...string) (*flagd.Server, func()) {
	t.Helper()
	started := make(chan *flagd.Server, 1)
	var cancel context.CancelFunc
	flagdServeStarted = func(s *flagd.Server, c context.CancelFunc) { cancel = c; started <- s }
	defer func() { flagdServeStarted = nil }()
	done := make(chan int, 1)
	io, _, _, errOut := iostreams.Test()
	go func() { done <- Main(append([]string{"flagd", "serve"}, args...), io) }()
	var srv *flagd.Server
	select {
	case srv = <-started:
	case code := <-done:
		t.Fatalf("flagd serve exited %d\n%s", code, errOut)
	case <-time.After(10 * time.Second):
		t.Fatal("flagd serve did not start")
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case code := <-done:
				if code != 0 {
					t.Errorf("flagd serve exited %d after SIGTERM\n%s", code, errOut)
				}
			case <-time.After(15 * time.Second):
				t.Error("flagd serve did not shut down")
			}
		})
	}
	t.Cleanup(stop)
	return srv, stop
}

func portOf(t testing.TB, addr string) uint16 {
	t.Helper()
	_, p, _ := net.SplitHostPort(addr)
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		t.Fatal(err)
	}
	return uint16(n)
}

// stormctl runs one command through Main and returns its stdout.
func stormctl(t testing.TB, args ...string) []byte {
	t.Helper()
	io, _, out, errOut := iostreams.Test()
	if code := Main(args, io); code != 0 {
		t.Fatalf("stormctl %v: exit %d\n%s", args, code, errOut)
	}
	return out.Bytes()
}

func actionID(t testing.TB, out []byte) string {
	t.Helper()
	var r struct {
		ActionID string `json:"action_id"`
	}
	if err := json.Unmarshal(out, &r); err != nil || r.ActionID == "" {
		t.Fatalf("no action_id in %s: %v", out, err)
	}
	return r.ActionID
}

// TestFlagdServeMovesGoFlagdProviders is the reach end to end: a responder
// runs `stormctl retries off checkout->payments` (guards, evidence from a
// real Prometheus, the Lua apply on a real redis-server) and services on
// the official Go flagd provider — in-process (sync) and RPC (Connect) —
// obey it; release, shed, a forced-open breaker and a 2s TTL that lapses
// with no other command reach them the same way.
func TestFlagdServeMovesGoFlagdProviders(t *testing.T) {
	e := startFlagdServe(t)
	clients := map[string]openfeature.IClient{}
	for mode, opts := range map[string][]gofd.ProviderOption{
		// Each names itself as flagd's clients do, so it counts in "seen by":
		// a provider id on the sync stream, a selector on the event stream.
		"in-process": {gofd.WithInProcessResolver(), gofd.WithPort(portOf(t, e.srv.Addr("sync"))), gofd.WithProviderID("checkout-0")},
		"rpc":        {gofd.WithRPCResolver(), gofd.WithPort(portOf(t, e.srv.Addr("eval"))), gofd.WithSelector("flagSetId=stormctl")},
	} {
		p, err := gofd.NewProvider(append(opts, gofd.WithHost("127.0.0.1"), gofd.WithoutCache())...)
		if err != nil {
			t.Fatal(err)
		}
		api := isolated.NewAPI()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = api.SetProviderAndWait(ctx, p)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		t.Cleanup(func() { _ = api.Shutdown(context.Background()) })
		clients[mode] = api.NewClient()
	}
	bg := context.Background()
	ec := func(svc, dep string) openfeature.EvaluationContext {
		return openfeature.NewTargetlessEvaluationContext(map[string]any{"service": svc, "dependency": dep})
	}
	retries := func(c openfeature.IClient, svc, dep string) bool {
		return c.Boolean(bg, lever.RetriesEnabled, true, ec(svc, dep))
	}
	wait := func(what string, cond func(openfeature.IClient) bool) {
		t.Helper()
		for mode, c := range clients {
			deadline := time.Now().Add(5 * time.Second)
			for !cond(c) {
				if time.Now().After(deadline) {
					t.Fatalf("%s never saw %s", mode, what)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	}

	id := actionID(t, stormctl(t, "retries", "off", "checkout->payments", "--ttl", "10m", "--reason", "amplification 4x", "--yes", "-o", "json"))
	wait("retries off for checkout->payments", func(c openfeature.IClient) bool { return !retries(c, "checkout", "payments") })
	for mode, c := range clients {
		if !retries(c, "search", "") || !retries(c, "checkout", "ledger") {
			t.Errorf("%s: retries off reached search or checkout->ledger", mode)
		}
	}
	// Seen by: the server's own reader and both flagd clients acknowledge.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var st struct {
			Instances int `json:"instances"`
			Levers    []struct {
				SeenBy int `json:"seen_by"`
			} `json:"levers"`
		}
		if err := json.Unmarshal(stormctl(t, "status", "-o", "json"), &st); err != nil {
			t.Fatal(err)
		}
		if len(st.Levers) == 1 && st.Instances == 3 && st.Levers[0].SeenBy == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never said seen by 3/3 (the server and its two clients): %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stormctl(t, "action", "release", id, "--reason", "gateway recovered", "--yes")
	wait("retries back after release", func(c openfeature.IClient) bool { return retries(c, "checkout", "payments") })

	stormctl(t, "shed", "checkout", "30", "--ttl", "10m", "--reason", "pool full", "--force", "--yes")
	stormctl(t, "breaker", "open", "payments", "--ttl", "10m", "--reason", "p99 above timeout", "--force", "--yes")
	wait("shed 30 for checkout", func(c openfeature.IClient) bool { return c.Int(bg, lever.ShedPercent, -1, ec("checkout", "")) == 30 })
	wait("the breaker to payments open for ledger too", func(c openfeature.IClient) bool {
		return c.Boolean(bg, lever.BreakerForcedOpen, false, ec("ledger", "payments"))
	})

	stormctl(t, "retries", "off", "checkout->payments", "--ttl", "2s", "--reason", "short test", "--yes")
	wait("retries off with a 2s TTL", func(c openfeature.IClient) bool { return !retries(c, "checkout", "payments") })
	wait("retries back at the TTL, with no other command", func(c openfeature.IClient) bool { return retries(c, "checkout", "payments") })
}
