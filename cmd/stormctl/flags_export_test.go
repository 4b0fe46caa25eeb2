package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	gofd "github.com/open-feature/go-sdk-contrib/providers/flagd/pkg"
	"github.com/open-feature/go-sdk/openfeature"
	"github.com/open-feature/go-sdk/openfeature/isolated"

	"github.com/stormctl/stormctl/internal/iostreams"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lever"
)

// TestFlagsExportIsAFlagdFile: `stormctl flags export --format flagd` writes
// a file that the official Go flagd provider's file mode (flagd's file sync)
// reads, and --watch rewrites it atomically on a change and at the expiry.
func TestFlagsExportIsAFlagdFile(t *testing.T) {
	startFlagdServe(t) // the same Prometheus, Redis and config; the server itself is not used
	out := filepath.Join(t.TempDir(), "stormctl.flagd.json")

	stormctl(t, "retries", "off", "checkout->payments", "--ttl", "3s", "--reason", "amplification 4x", "--yes")
	stormctl(t, "flags", "export", "--format", "flagd", "--out", out)
	var cfg struct {
		Flags map[string]struct {
			Variants map[string]any `json:"variants"`
		} `json:"flags"`
	}
	raw, err := os.ReadFile(out)
	if err != nil || json.Unmarshal(raw, &cfg) != nil || cfg.Flags[lever.RetriesEnabled].Variants["off"] != false {
		t.Fatalf("export wrote %s (%v)", raw, err)
	}
	if len(cfg.Flags) != len(lever.Table) {
		t.Errorf("export has %d flags, want the %d of the contract", len(cfg.Flags), len(lever.Table))
	}

	written := make(chan context.CancelFunc, 16)
	flagsExportWritten = func(_ string, stop context.CancelFunc) { written <- stop }
	t.Cleanup(func() { flagsExportWritten = nil })
	var stop context.CancelFunc
	done := make(chan int, 1)
	io, _, _, errOut := iostreams.Test()
	go func() {
		done <- Main([]string{"flags", "export", "--format", "flagd", "--out", out, "--watch"}, io)
	}()
	select {
	case stop = <-written:
	case <-time.After(10 * time.Second):
		t.Fatalf("--watch wrote nothing\n%s", errOut)
	}

	p, err := gofd.NewProvider(gofd.WithFileResolver(), gofd.WithOfflineFilePath(out))
	if err != nil {
		t.Fatal(err)
	}
	api := isolated.NewAPI()
	if err := api.SetProviderAndWait(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Shutdown(context.Background()) })
	c := api.NewClient()
	ec := openfeature.NewTargetlessEvaluationContext(map[string]any{"service": "checkout", "dependency": "payments"})
	if c.Boolean(context.Background(), lever.RetriesEnabled, true, ec) {
		t.Fatal("flagd's file mode reads retries enabled for checkout->payments under the lever")
	}
	deadline := time.Now().Add(10 * time.Second)
	for !c.Boolean(context.Background(), lever.RetriesEnabled, false, ec) {
		if time.Now().After(deadline) {
			t.Fatalf("the file was not rewritten at the lever's expiry\n%s", errOut)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("flags export --watch exited %d\n%s", code, errOut)
		}
	case <-time.After(10 * time.Second):
		t.Error("flags export --watch did not stop")
	}
}

// TestFlagsExportRedisUnreachable names the address and says nothing was
// written, rather than writing an empty configuration.
func TestFlagsExportRedisUnreachable(t *testing.T) {
	dead := "redis://127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	t.Setenv("STORMCTL_CONFIG", os.DevNull) // no config file
	t.Setenv("STORMCTL_REDIS_URL", dead)
	out := filepath.Join(t.TempDir(), "f.json")
	io, _, _, errOut := iostreams.Test()
	code := Main([]string{"flags", "export", "--out", out, "--timeout", "500ms"}, io)
	if code == 0 || !strings.Contains(errOut.String(), strings.TrimPrefix(dead, "redis://")) || !strings.Contains(errOut.String(), "nothing written") {
		t.Errorf("exit %d, stderr %q: want a failure naming %s and saying nothing was written", code, errOut, dead)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a file was written without a read of Redis")
	}
}
