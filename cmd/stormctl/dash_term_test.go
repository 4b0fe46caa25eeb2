package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestNoTerminalQueryStall: on a terminal that answers no queries (the
// pseudo-terminal of script(1)), a command returns at once; Bubble Tea
// v1's start-up query used to hold every command for termenv's 5 s.
func TestNoTerminalQueryStall(t *testing.T) {
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) not installed")
	}
	raw, _ := json.Marshal([]string{"--help"})
	cmd := exec.Command(script, "-qec", os.Args[0]+" -test.run=^TestBoundedInputChild$", os.DevNull)
	cmd.Env = append(os.Environ(), boundedArgs+"="+string(raw), "TERM=xterm-256color", "NO_COLOR=", "STORMCTL_CONFIG="+os.DevNull)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if took > 4*time.Second {
		t.Fatalf("--help on an unanswering terminal took %v", took)
	}
	t.Logf("--help on an unanswering terminal: %v", took.Round(time.Millisecond))
}

func TestLuminance(t *testing.T) {
	for _, c := range []struct {
		rgb  []string
		dark bool
	}{{[]string{"0000", "0000", "0000"}, true}, {[]string{"ffff", "ffff", "ffff"}, false}, {[]string{"1e", "1e", "2e"}, true}, {[]string{"fd", "f6", "e3"}, false}} {
		parts := make([][]byte, 3)
		for i, p := range c.rgb {
			parts[i] = []byte(p)
		}
		if got := luminance(parts) < 0.5; got != c.dark {
			t.Errorf("%v: dark %v, want %v", c.rgb, got, c.dark)
		}
	}
}
