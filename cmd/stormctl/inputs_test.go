package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/exit"
)

var echoed = regexp.MustCompile(`a{16,}`)

// A huge target is echoed once, truncated, wherever the CLI reports it.
func TestHugeTargetEchoedOnceTruncated(t *testing.T) {
	e := newActionEnv(t)
	huge := strings.Repeat("a", 10<<10)
	for _, args := range [][]string{
		{"action", "apply", "retries", huge, "off"},
		{"action", "apply", "retries", "checkout->" + huge, "off"},
		{"action", "apply", "shed", huge, "10"},
		{"action", "apply", "retries", "checkout->payments", huge},
		{"action", "apply", huge, "checkout", "off"},
	} {
		out, errOut, code := e.run("alice", append(args, applyArgs...)...)
		if code != exit.Refused && code != exit.Usage {
			t.Fatalf("exit %d: %.300s", code, errOut)
		}
		runs := echoed.FindAllString(errOut, -1)
		if len(runs) != 1 || len(runs[0]) > 64 || len(errOut) > 1000 || !strings.Contains(errOut, "…") {
			t.Errorf("%.20s…: the 10 KB argument is echoed %d times in %d bytes of stderr: %.600s", args[2:], len(runs), len(errOut), errOut)
		}
		if out != "" {
			t.Errorf("stdout: %.200s", out)
		}
	}
}

func TestExplicitConfigMustExist(t *testing.T) {
	e := newActionEnv(t)
	missing := filepath.Join(t.TempDir(), "typo.yaml")
	_, msg := e.expect(exit.Usage, "alice", "--config", missing, "status")
	if !strings.Contains(msg, missing) {
		t.Fatalf("missing --config: %s", msg)
	}
	// So is a missing file named by STORMCTL_CONFIG: acting without its
	// policy could put a lever in another namespace.
	e.env["STORMCTL_CONFIG"] = missing
	if _, msg := e.expect(exit.Usage, "alice", "status"); !strings.Contains(msg, "STORMCTL_CONFIG "+missing) {
		t.Fatalf("missing STORMCTL_CONFIG: %s", msg)
	}
	// The default path may be absent: an empty config.
	delete(e.env, "STORMCTL_CONFIG")
	t.Setenv("STORMCTL_CONFIG", "")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	e.expect(exit.OK, "alice", "status")
}

// Config errors name file:line:col and speak YAML, never Go.
func TestConfigErrorsArePositioned(t *testing.T) {
	e := newActionEnv(t)
	dir := t.TempDir()
	for body, want := range map[string]string{
		"prometheus: {timeout: 5 minutes}":             `:4:27: "5 minutes" is not a duration`,
		"policy: {rate-limit: {window: 3x}}":           `:4:35: "3x" is not a duration`,
		"policy: {max-ttl: {retries: {a: 1}}}":         `:4:33: mapping was used where a duration`,
		"policy: {blast-radius: abc}":                  ":4:28: string was used where an integer is expected",
		"policy: {blast-radius: 99999999999999999999}": ":4:28: value 99999999999999999999 is too large for an integer",
		"actor: [a]":                          ":4:12: sequence was used where a string is expected",
		"inventory: {from-prometheus: maybe}": ":4:34: string was used where true or false is expected",
	} {
		path := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(path, []byte("current-context: a\ncontexts:\n  a:\n    "+body+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, msg := e.expect(exit.Usage, "alice", "--config", path, "status")
		if !strings.Contains(msg, path+want) || strings.Contains(msg, "Go ") || strings.Contains(msg, "interface {}") || strings.Contains(strings.ReplaceAll(msg, path, ""), "config.") {
			t.Errorf("%s: got %q, want %q", body, msg, path+want)
		}
	}
}
