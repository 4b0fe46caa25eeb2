package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/iostreams"
)

// run executes stormctl in-process with captured streams and no config file.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Setenv("STORMCTL_CONFIG", os.DevNull) // no config file
	io, _, out, errOut := iostreams.Test()
	code = Main(args, io)
	return code, out.String(), errOut.String()
}

func TestExitCodes(t *testing.T) {
	cases := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"version"}, 0, ""},
		{[]string{"bogus"}, 2, `unknown command "bogus"`},
		{[]string{"version", "--nope"}, 2, "unknown flag"},
		{[]string{"version", "extra"}, 2, "unknown command"},
		{[]string{"query", "show", "amplificaton"}, 2, "amplification"},
		{[]string{"query", "show", "amplification", "--service", `x"} or vector(1) #`}, 2, "service"},
		{[]string{"query", "show", "amplification", "--window", "soon"}, 2, "--window"},
		{[]string{"query", "show", "pool_saturation", "--pack", "istio"}, 2, "istio"},
		{[]string{"query", "check"}, 2, "--all"},
		{[]string{"query", "run", "amplification"}, 2, "STORMCTL_PROMETHEUS_URL"},
		{[]string{"query", "list", "-o", "xml"}, 2, "xml"},
		{[]string{"--context", "prod", "query", "list"}, 2, `context "prod"`},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, _, stderr := run(t, c.args...)
			if code != c.code || !strings.Contains(stderr, c.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr, c.code, c.stderr)
			}
			if strings.Count(strings.TrimSpace(stderr), "\n") > 0 && c.code != 0 {
				t.Errorf("error is not one line: %q", stderr)
			}
		})
	}
}

func TestCompletionScripts(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		code, out, _ := run(t, "completion", sh)
		if code != 0 || !strings.Contains(out, "stormctl") {
			t.Errorf("completion %s: exit %d", sh, code)
		}
	}
}

func TestEvalTime(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"":                     {},
		"-10m":                 now.Add(-10 * time.Minute),
		"2026-11-29T11:00:00Z": now.Add(-time.Hour),
		"1795000000":           time.Unix(1795000000, 0),
	} {
		got, err := evalTime(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("evalTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"yesterday", "-soon", "1e99", "-1", "NaN", "+Inf", "9.3e9", "-100000y"} {
		if _, err := evalTime(bad, now); exit.Code(err) != exit.Usage {
			t.Errorf("evalTime(%q) = %v, want a usage error", bad, err)
		}
	}
}
