package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lever"
)

// nodeClient is a Node process on the published OpenFeature SDK and a
// published provider (flags/flagd/testdata/node/client.mjs).
type nodeClient struct {
	mode  string
	mu    sync.Mutex
	in    io.WriteCloser
	out   *bufio.Scanner
	seq   int
	stder *syncBuf
}

type nodeAnswer struct {
	Value   any    `json:"value"`
	Variant string `json:"variant"`
	Reason  string `json:"reason"`
	Error   string `json:"error"`
	Changes int    `json:"changes"`
}

type syncBuf struct {
	mu sync.Mutex
	b  []byte
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

func (s *syncBuf) String() string { s.mu.Lock(); defer s.mu.Unlock(); return string(s.b) }

func startNode(t testing.TB, app, mode, addr string) *nodeClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "node", filepath.Join(app, "client.mjs"), mode, "127.0.0.1", strconv.Itoa(int(portOf(t, addr))))
	cmd.Dir = app
	c := &nodeClient{mode: mode, stder: &syncBuf{}}
	cmd.Stderr = c.stder
	var err error
	if c.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cancel()
			<-done
		}
		cancel()
	})
	c.out = bufio.NewScanner(stdout)
	ready := make(chan bool, 1)
	go func() { ready <- c.out.Scan() }()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("node %s exited before ready\n%s", mode, c.stder)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("node %s not ready after 20s\n%s", mode, c.stder)
	}
	return c
}

// ask evaluates one flag in the Node process.
func (c *nodeClient) ask(t testing.TB, typ, key string, def any, svc, dep string) nodeAnswer {
	t.Helper()
	return c.query(t, map[string]any{"type": typ, "key": key, "default": def,
		"context": map[string]any{"targetingKey": "t", "service": svc, "dependency": dep}})
}

// askUntil has the Node process evaluate a number flag until it is want.
func (c *nodeClient) askUntil(t testing.TB, key string, want float64, svc string) nodeAnswer {
	t.Helper()
	return c.query(t, map[string]any{"type": "until", "key": key, "default": -1, "want": want,
		"context": map[string]any{"targetingKey": "t", "service": svc}})
}

func (c *nodeClient) query(t testing.TB, q map[string]any) nodeAnswer {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	q["id"] = c.seq
	raw, _ := json.Marshal(q)
	if _, err := fmt.Fprintf(c.in, "%s\n", raw); err != nil {
		t.Fatalf("node %s: %v\n%s", c.mode, err, c.stder)
	}
	if !c.out.Scan() {
		t.Fatalf("node %s exited\n%s", c.mode, c.stder)
	}
	var a nodeAnswer
	if err := json.Unmarshal(c.out.Bytes(), &a); err != nil {
		t.Fatalf("node %s answered %q: %v", c.mode, c.out.Bytes(), err)
	}
	return a
}

// TestFlagdServeMovesNodeServices: Node services on @openfeature/server-sdk
// with @openfeature/flagd-provider (in-process and RPC) and
// @openfeature/ofrep-provider, exact versions from the committed
// package-lock.json, obey levers set through Main on a real redis-server.
func TestFlagdServeMovesNodeServices(t *testing.T) {
	app := testenv.NodeApp(t, filepath.Join("..", "..", "flags", "flagd", "testdata", "node"))
	e := startFlagdServe(t)
	clients := []*nodeClient{
		startNode(t, app, "in-process", e.srv.Addr("sync")),
		startNode(t, app, "rpc", e.srv.Addr("eval")),
		startNode(t, app, "ofrep", e.srv.Addr("ofrep")),
	}
	retries := func(c *nodeClient, svc, dep string) bool {
		a := c.ask(t, "bool", lever.RetriesEnabled, true, svc, dep)
		return a.Value == true
	}
	wait := func(what string, cond func(*nodeClient) bool) {
		t.Helper()
		for _, c := range clients {
			deadline := time.Now().Add(10 * time.Second)
			for !cond(c) {
				if time.Now().After(deadline) {
					t.Fatalf("node %s never saw %s\n%s", c.mode, what, c.stder)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}

	id := actionID(t, stormctl(t, "retries", "off", "checkout->payments", "--ttl", "10m", "--reason", "amplification 4x", "--yes", "-o", "json"))
	wait("retries off for checkout->payments", func(c *nodeClient) bool { return !retries(c, "checkout", "payments") })
	for _, c := range clients {
		if !retries(c, "search", "") {
			t.Errorf("node %s: retries off reached search", c.mode)
		}
		if a := c.ask(t, "bool", lever.RetriesEnabled, true, "checkout", "payments"); a.Variant != "off" {
			t.Errorf("node %s: variant %q, want off (%+v)", c.mode, a.Variant, a)
		}
	}
	stormctl(t, "action", "release", id, "--reason", "gateway recovered", "--yes")
	wait("retries back after release", func(c *nodeClient) bool { return retries(c, "checkout", "payments") })

	stormctl(t, "shed", "checkout", "30", "--ttl", "10m", "--reason", "pool full", "--force", "--yes")
	stormctl(t, "breaker", "open", "payments", "--ttl", "10m", "--reason", "p99 above timeout", "--force", "--yes")
	wait("shed 30 for checkout", func(c *nodeClient) bool {
		return c.ask(t, "number", lever.ShedPercent, -1, "checkout", "").Value == float64(30)
	})
	wait("the breaker to payments open", func(c *nodeClient) bool {
		return c.ask(t, "bool", lever.BreakerForcedOpen, false, "ledger", "payments").Value == true
	})

	stormctl(t, "retries", "off", "checkout->payments", "--ttl", "2s", "--reason", "short test", "--yes")
	wait("retries off with a 2s TTL", func(c *nodeClient) bool { return !retries(c, "checkout", "payments") })
	wait("retries back at the TTL, with no other command", func(c *nodeClient) bool { return retries(c, "checkout", "payments") })
	for _, c := range clients[:2] {
		if a := c.ask(t, "bool", lever.RetriesEnabled, true, "checkout", "payments"); a.Changes == 0 {
			t.Errorf("node %s: no configuration-change event arrived", c.mode)
		}
	}
}

// TestNodeClientStartedBeforeTheServer: @openfeature/flagd-provider 0.16.1
// whose first connect fails (stormctl flagd serve not up yet) keeps
// retrying; once the server is up its values follow the levers. Whether it
// then emits change events is logged, not asserted: the issue reports that
// it does not, and services must not depend on those events.
func TestNodeClientStartedBeforeTheServer(t *testing.T) {
	app := testenv.NodeApp(t, filepath.Join("..", "..", "flags", "flagd", "testdata", "node"))
	addr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	c := startNode(t, app, "in-process", addr)
	startFlagdServe(t, "--sync-addr", addr)
	stormctl(t, "retries", "off", "checkout->payments", "--ttl", "10m", "--reason", "amplification 4x", "--yes")
	deadline := time.Now().Add(30 * time.Second)
	var a nodeAnswer
	for {
		if a = c.ask(t, "bool", lever.RetriesEnabled, true, "checkout", "payments"); a.Value == false {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a Node client started before the server never saw retries off: %+v\n%s", a, c.stder)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("Node in-process client after a failed first connect: value follows the lever; %d change events seen", a.Changes)
}

// TestNodeServicesResyncAfterServerRestart: stormctl flagd serve is stopped
// (SIGTERM), a lever changes meanwhile, and a new server starts on the same
// ports: the Node services, in-process and RPC, reconnect and see it.
func TestNodeServicesResyncAfterServerRestart(t *testing.T) {
	app := testenv.NodeApp(t, filepath.Join("..", "..", "flags", "flagd", "testdata", "node"))
	e := startFlagdServe(t)
	clients := []*nodeClient{
		startNode(t, app, "in-process", e.srv.Addr("sync")),
		startNode(t, app, "rpc", e.srv.Addr("eval")),
	}
	stormctl(t, "shed", "checkout", "20", "--ttl", "10m", "--reason", "pool full", "--force", "--yes")
	waitNode := func(what string, want float64) {
		t.Helper()
		for _, c := range clients {
			deadline := time.Now().Add(30 * time.Second)
			for c.ask(t, "number", lever.ShedPercent, -1, "checkout", "").Value != want {
				if time.Now().After(deadline) {
					t.Fatalf("node %s never saw %s\n%s", c.mode, what, c.stder)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	waitNode("shed 20", 20)
	addrs := []string{"--sync-addr", e.srv.Addr("sync"), "--eval-addr", e.srv.Addr("eval"),
		"--ofrep-addr", e.srv.Addr("ofrep"), "--management-addr", e.srv.Addr("management")}
	e.stop()
	stormctl(t, "shed", "checkout", "35", "--ttl", "10m", "--reason", "worse", "--force", "--yes", "--supersede")
	serveThroughMain(t, addrs...)
	waitNode("shed 35, set while the server was down", 35)
}
