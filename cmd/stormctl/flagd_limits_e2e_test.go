package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/testenv"
)

// TestFlagdServeSurvivesIdleClients runs the real `stormctl flagd serve` as
// a child under `prlimit --nofile=200` on a real redis-server and holds 250
// connections to OFREP that send nothing or a body that never ends: /readyz
// keeps answering, the server never runs out of descriptors, the idle and
// slow connections are closed after --read-timeout, and OFREP serves again.
func TestFlagdServeSurvivesIdleClients(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: builds stormctl and runs it under prlimit")
	}
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("prlimit (util-linux) is not installed")
	}
	rs := testenv.StartRedis(t, testenv.RedisOptions{})
	dir := t.TempDir()
	bin := filepath.Join(dir, "stormctl")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("contexts:\n  t:\n    redis: {namespace: fd}\ncurrent-context: t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("prlimit", "--nofile=200:200", "--", bin, "flagd", "serve",
		"--sync-addr", "127.0.0.1:0", "--eval-addr", "127.0.0.1:0", "--ofrep-addr", "127.0.0.1:0", "--management-addr", "127.0.0.1:0",
		"--read-timeout", "2s", "--idle-timeout", "2s")
	cmd.Env = append(os.Environ(), "STORMCTL_CONFIG="+cfg, "STORMCTL_REDIS_URL="+rs.URL("", ""), "XDG_STATE_HOME="+dir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var (
		logMu sync.Mutex
		log   strings.Builder
	)
	addrs := make(chan []string, 1)
	go func() {
		re := regexp.MustCompile(`sync (\S+), evaluation (\S+), OFREP (\S+), management (\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logMu.Lock()
			log.WriteString(sc.Text() + "\n")
			logMu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addrs <- m[1:]
			}
		}
	}()
	var ofrepAddr, mgmtAddr string
	select {
	case a := <-addrs:
		ofrepAddr, mgmtAddr = a[2], a[3]
	case <-time.After(30 * time.Second):
		t.Fatal("flagd serve did not say where it listens")
	}
	get := func(timeout time.Duration, method, url string) (int, error) {
		c := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
		req, _ := http.NewRequest(method, url, strings.NewReader(`{"context":{"service":"checkout"}}`))
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	ready := "http://" + mgmtAddr + "/readyz"
	ofrep := "http://" + ofrepAddr + "/ofrep/v1/evaluate/flags"
	waitFor := func(what string, within time.Duration, ok func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		for !ok() {
			if time.Since(start) > within {
				logMu.Lock()
				defer logMu.Unlock()
				t.Fatalf("%s: not within %v\n%s", what, within, log.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
		return time.Since(start)
	}
	waitFor("ready", 20*time.Second, func() bool { c, _ := get(2*time.Second, "GET", ready); return c == 200 })
	waitFor("OFREP answers", 10*time.Second, func() bool { c, _ := get(2*time.Second, "POST", ofrep); return c == 200 })

	// 200 connections that send nothing, 50 whose body never ends.
	var conns []net.Conn
	for i := range 250 {
		c, err := net.DialTimeout("tcp", ofrepAddr, 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		if i >= 200 {
			fmt.Fprintf(c, "POST /ofrep/v1/evaluate/flags HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{\"context\":")
		}
	}
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	// Management answers at once while OFREP is full.
	for range 5 {
		if c, err := get(3*time.Second, "GET", ready); err != nil || c != 200 {
			t.Fatalf("/readyz while OFREP is full: %d, %v", c, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The server closes every one of them: nothing sent in time.
	closed := make(chan struct{}, len(conns))
	for _, c := range conns {
		go func() {
			_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
			_, _ = io.Copy(io.Discard, c) // ends at the server's close
			closed <- struct{}{}
		}()
	}
	took := waitFor("OFREP serves again", 60*time.Second, func() bool { c, _ := get(20*time.Second, "POST", ofrep); return c == 200 })
	t.Logf("OFREP served again %v after the idle connections", took)
	for i := range conns {
		select {
		case <-closed:
		case <-time.After(60 * time.Second):
			t.Fatalf("only %d of %d idle connections were closed by the server", i, len(conns))
		}
	}
	if c, err := get(3*time.Second, "GET", ready); err != nil || c != 200 {
		t.Fatalf("/readyz after: %d, %v", c, err)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if strings.Contains(log.String(), "too many open files") {
		t.Fatalf("the server ran out of descriptors:\n%s", log.String())
	}
}
