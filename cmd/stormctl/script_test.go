package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/stormctl/stormctl/internal/iostreams"
	"github.com/stormctl/stormctl/internal/testenv"
)

// TestMain lets testscript run this test binary as the `stormctl` command.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"stormctl": func() { os.Exit(Main(os.Args[1:], iostreams.System())) },
	})
}

// TestScripts runs the end-to-end scripts in testdata/script: each reads
// like a runbook step and runs the real binary against real servers. The
// servers are shared by every script of one run (and stopped with it): a
// Prometheus loaded with the storm fixture and a redis-server. Scripts are
// isolated from each other by a control-plane namespace of their own.
func TestScripts(t *testing.T) {
	prom := testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: stormFixture(fixtureEnd())})
	redisSrv := testenv.StartRedis(t, testenv.RedisOptions{})
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			ns := filepath.Base(env.WorkDir)
			cfg := "contexts:\n  test:\n    redis:\n      namespace: " + strconv.Quote(ns) + "\ncurrent-context: test\n"
			path := filepath.Join(env.WorkDir, "config.yaml")
			if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
				return err
			}
			env.Setenv("STORMCTL_CONFIG", path)
			env.Setenv("STORMCTL_PROMETHEUS_URL", prom.URL)
			env.Setenv("STORMCTL_REDIS_URL", redisSrv.URL("", ""))
			env.Setenv("STORMCTL_ACTOR", "alice")
			env.Setenv("XDG_STATE_HOME", filepath.Join(env.WorkDir, "state"))
			env.Setenv("NO_COLOR", "1")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits": cmdExits,
		},
	})
}

// cmdExits runs a command and asserts its exit code: `exits 4 stormctl query check ...`.
// Its stdout and stderr are kept for the following stdout/stderr assertions.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE command [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad code %q", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}
