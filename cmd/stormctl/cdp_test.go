package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/stormctl/stormctl/internal/testenv"
)

// devtools drives one page of Debian's headless Chromium over the DevTools
// protocol: it records every network request the page makes, which
// Chromium's own background services (updates, time, sign-in) do not
// appear in, and evaluates checks in the rendered page (DevTools'
// Runtime.evaluate is not bound by the page's Content-Security-Policy).
type devtools struct {
	t  *testing.T
	ws *websocket.Conn

	mu       sync.Mutex
	next     int
	pending  map[int]chan cdpMessage
	events   []cdpMessage
	eventsCh chan struct{}
}

type cdpMessage struct {
	ID     int             `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

var devtoolsURL = regexp.MustCompile(`DevTools listening on (ws://127\.0\.0\.1:\d+)/`)

// startChromium starts headless Chromium with remote debugging on a free
// port and connects to its first page.
func startChromium(t *testing.T) *devtools {
	t.Helper()
	testenv.Need(t, "chromium")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--no-first-run", "--disable-extensions", "--disable-sync", "--hide-scrollbars", "--window-size=1200,2400",
		"--user-data-dir="+t.TempDir(), "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
		"--remote-allow-origins=http://127.0.0.1", "about:blank")
	// Chromium's renderer and crashpad children outlive a killed browser
	// process and keep writing the profile while TempDir removes it: kill
	// the whole group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := devtoolsURL.FindStringSubmatch(sc.Text()); m != nil {
				found <- strings.TrimPrefix(m[1], "ws://")
				break
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	var addr string
	select {
	case addr = <-found:
	case <-time.After(60 * time.Second):
		t.Fatal("chromium did not open its DevTools port within 60s")
	}
	var targets []struct{ Type, WebSocketDebuggerURL string }
	for deadline := time.Now().Add(30 * time.Second); len(targets) == 0 || targets[0].Type != "page"; {
		if time.Now().After(deadline) {
			t.Fatalf("no page target on %s: %+v", addr, targets)
		}
		time.Sleep(100 * time.Millisecond)
		resp, err := http.Get("http://" + addr + "/json/list")
		if err != nil {
			continue
		}
		targets = nil
		_ = json.NewDecoder(resp.Body).Decode(&targets)
		resp.Body.Close()
		for len(targets) > 0 && targets[0].Type != "page" {
			targets = targets[1:]
		}
	}
	ws, err := websocket.Dial(targets[0].WebSocketDebuggerURL, "", "http://127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	ws.MaxPayloadBytes = 64 << 20 // screenshots
	d := &devtools{t: t, ws: ws, pending: map[int]chan cdpMessage{}, eventsCh: make(chan struct{}, 1)}
	t.Cleanup(func() { ws.Close() })
	go d.read()
	return d
}

func (d *devtools) read() {
	for {
		var m cdpMessage
		if err := websocket.JSON.Receive(d.ws, &m); err != nil {
			return
		}
		d.mu.Lock()
		if ch, ok := d.pending[m.ID]; ok && m.ID != 0 {
			delete(d.pending, m.ID)
			ch <- m
		} else if m.Method != "" {
			d.events = append(d.events, m)
			select {
			case d.eventsCh <- struct{}{}:
			default:
			}
		}
		d.mu.Unlock()
	}
}

// call sends a command and decodes its result into out (nil: ignored).
func (d *devtools) call(method string, params any, out any) {
	d.t.Helper()
	d.mu.Lock()
	d.next++
	id, ch := d.next, make(chan cdpMessage, 1)
	d.pending[id] = ch
	d.mu.Unlock()
	if err := websocket.JSON.Send(d.ws, map[string]any{"id": id, "method": method, "params": params}); err != nil {
		d.t.Fatalf("%s: %v", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			d.t.Fatalf("%s: %s", method, m.Error.Message)
		}
		if out != nil {
			if err := json.Unmarshal(m.Result, out); err != nil {
				d.t.Fatalf("%s: %v", method, err)
			}
		}
	case <-time.After(60 * time.Second):
		d.t.Fatalf("%s: no answer within 60s", method)
	}
}

// waitEvent waits for an event of method.
func (d *devtools) waitEvent(method string) {
	d.t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		if len(d.eventsOf(method)) > 0 {
			return
		}
		select {
		case <-d.eventsCh:
		case <-deadline:
			d.t.Fatalf("no %s within 60s", method)
		}
	}
}

func (d *devtools) eventsOf(method string) []cdpMessage {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []cdpMessage
	for _, e := range d.events {
		if e.Method == method {
			out = append(out, e)
		}
	}
	return out
}

// open loads url with network recording on and waits for its load event.
func (d *devtools) open(url string) {
	d.t.Helper()
	d.call("Network.enable", map[string]any{}, nil)
	d.call("Page.enable", map[string]any{}, nil)
	d.call("Page.navigate", map[string]any{"url": url}, nil)
	d.waitEvent("Page.loadEventFired")
}

// requests are the URLs the page asked for, its own document excepted.
func (d *devtools) requests(document string) []string {
	var out []string
	for _, e := range d.eventsOf("Network.requestWillBeSent") {
		var p struct{ Request struct{ URL string } }
		_ = json.Unmarshal(e.Params, &p)
		if p.Request.URL != document {
			out = append(out, p.Request.URL)
		}
	}
	return out
}

// eval runs expr in the page and decodes its JSON-able value into out.
func (d *devtools) eval(expr string, out any) {
	d.t.Helper()
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct{ Text string } `json:"exceptionDetails"`
	}
	d.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res)
	if res.ExceptionDetails != nil {
		d.t.Fatalf("evaluate: %s", res.ExceptionDetails.Text)
	}
	if err := json.Unmarshal(res.Result.Value, out); err != nil {
		d.t.Fatalf("evaluate: %v (%s)", err, res.Result.Value)
	}
}

// screenshot returns a PNG of the whole page.
func (d *devtools) screenshot() []byte {
	d.t.Helper()
	var res struct{ Data []byte }
	d.call("Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &res)
	if len(res.Data) == 0 {
		d.t.Fatal(fmt.Errorf("empty screenshot"))
	}
	return res.Data
}
