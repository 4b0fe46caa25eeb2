package flagd_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	syncv1 "buf.build/gen/go/open-feature/flagd/protocolbuffers/go/flagd/sync/v1"
	"connectrpc.com/connect"

	"github.com/stormctl/stormctl/flags/flagd"
	"github.com/stormctl/stormctl/lever"
)

// stuckClient opens a Connect sync stream and never reads it: the server's
// writes to it fill the socket buffers and block.
func stuckClient(t *testing.T, addr string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.(*net.TCPConn).SetReadBuffer(1024)
	req := "POST /flagd.sync.v1.FlagSyncService/SyncFlags HTTP/1.1\r\nHost: x\r\n" +
		"Content-Type: application/connect+proto\r\nConnect-Protocol-Version: 1\r\nContent-Length: 5\r\n\r\n\x00\x00\x00\x00\x00"
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
}

// Test500StreamsEachPush: 500 concurrent sync streams (and one client that
// never reads) all receive every push.
func Test500StreamsEachPush(t *testing.T) {
	const n = 500
	e := startEnv(t, flagd.Options{})
	// Many levers make each configuration large, so the stuck client's
	// buffers fill within the test.
	for i := range 20 {
		e.w.set(t, lever.Degraded, fmt.Sprintf("svc-%02d", i), "rules-only", time.Hour)
	}
	stuckClient(t, e.srv.Addr("sync"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Each stream records the last push whose value it has received; the
	// check runs once per message, so the test itself stays cheap.
	seen := make([]atomic.Int64, n)
	var marker atomic.Pointer[string]
	var push atomic.Int64
	none := "\x00"
	marker.Store(&none)
	var wg sync.WaitGroup
	client := syncClient(e.srv.Addr("sync"))
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := client.SyncFlags(ctx, connect.NewRequest(&syncv1.SyncFlagsRequest{ProviderId: fmt.Sprint("c", i)}))
			if err != nil {
				return
			}
			for st.Receive() {
				p := push.Load()
				if strings.Contains(st.Msg().GetFlagConfiguration(), *marker.Load()) {
					seen[i].Store(p)
				}
			}
		}()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	var worst time.Duration
	for p := int64(1); p <= 10; p++ {
		pct := p * 7
		m := fmt.Sprintf(`"%d":%d`, pct, pct)
		marker.Store(&m)
		push.Store(p)
		start := time.Now()
		e.w.set(t, lever.Shed, "search", fmt.Sprint(pct), time.Hour)
		eventually(t, 30*time.Second, fmt.Sprintf("all %d streams with push %d", n, p), func() bool {
			for i := range seen {
				if seen[i].Load() != p {
					return false
				}
			}
			return true
		})
		worst = max(worst, time.Since(start))
	}
	t.Logf("%d streams: the slowest of 10 pushes reached all of them in %s", n, worst)
	if got := e.srv.Hub().Streams()["sync"]; got < n {
		t.Errorf("hub counts %d sync streams, want at least %d", got, n)
	}
}

// TestStuckClientIsDisconnected: a client that stops reading is cut after
// the write timeout, and its stream slot is freed.
func TestStuckClientIsDisconnected(t *testing.T) {
	e := startEnv(t, flagd.Options{WriteTimeout: 300 * time.Millisecond})
	long := strings.Repeat("x", 200) // long names make each configuration ~30 KB
	for i := range 20 {
		e.w.set(t, lever.Degraded, fmt.Sprintf("%s-%02d", long, i), "rules-only", time.Hour)
	}
	stuckClient(t, e.srv.Addr("sync"))
	eventually(t, 5*time.Second, "the stuck stream open", func() bool { return e.srv.Hub().Streams()["sync"] == 1 })
	// Push until its socket buffers (a few MB on loopback) are full and the
	// write timeout cuts it; each push waits for its snapshot to be published.
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		before := e.srv.Hub().Current()
		e.w.set(t, lever.Shed, "search", fmt.Sprint(i%100+1), time.Hour)
		eventually(t, 10*time.Second, "the push published", func() bool { return e.srv.Hub().Current() != before })
		if e.srv.Hub().Streams()["sync"] == 0 {
			return
		}
	}
	t.Fatal("a client that reads nothing was never disconnected")
}

// TestStreamsAreBounded: past MaxStreams a stream is refused with
// RESOURCE_EXHAUSTED rather than admitted.
func TestStreamsAreBounded(t *testing.T) {
	e := startEnv(t, flagd.Options{MaxStreams: 2})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := syncClient(e.srv.Addr("sync"))
	for i := range 2 {
		st, err := client.SyncFlags(ctx, connect.NewRequest(&syncv1.SyncFlagsRequest{}))
		if err != nil || !st.Receive() {
			t.Fatalf("stream %d: %v", i, err)
		}
	}
	st, err := client.SyncFlags(ctx, connect.NewRequest(&syncv1.SyncFlagsRequest{}))
	if err == nil && st.Receive() {
		t.Fatal("a third stream was admitted past MaxStreams=2")
	}
	if err == nil {
		err = st.Err()
	}
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeResourceExhausted {
		t.Errorf("third stream: %v, want resource_exhausted", err)
	}
}
