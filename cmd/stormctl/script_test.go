package main

import (
	"encoding/csv"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/stormctl/stormctl/internal/iostreams"
	"github.com/stormctl/stormctl/internal/testenv"
)

// TestMain lets testscript run this test binary as the `stormctl` command,
// and as `ontty` (onTTY), which runs a command with stdout on a terminal.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"stormctl": func() { os.Exit(Main(os.Args[1:], iostreams.System())) },
		"ontty":    func() { os.Exit(onTTY(os.Args[1:])) },
	})
}

// TestScripts runs the end-to-end scripts in testdata/script: each reads
// like a runbook step and runs the real binary against real servers. The
// servers are shared by every script of one run (and stopped with it): a
// Prometheus loaded with the storm fixture and a redis-server. Scripts are
// isolated from each other by a control-plane namespace of their own; a
// script that writes its own config names a namespace after itself.
//
// Besides testscript's commands and ontty, a script has exits (cmdExits),
// field and capture (cmdField, cmdCapture), csvcell (cmdCSVCell) and seed
// (cmdSeed).
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
			env.Setenv("XDG_CACHE_HOME", filepath.Join(env.WorkDir, "cache"))
			env.Setenv("NO_COLOR", "1")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":   cmdExits,
			"field":   cmdField,
			"capture": cmdCapture,
			"seed":    cmdSeed,
			"csvcell": cmdCSVCell,
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

// cmdCSVCell matches a regexp against every cell of a CSV file:
// `csvcell FILE PATTERN` passes when some cell matches, `! csvcell` when
// none does. FILE must parse as CSV either way.
func cmdCSVCell(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: csvcell FILE PATTERN")
	}
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	rows, err := csv.NewReader(strings.NewReader(ts.ReadFile(args[0]))).ReadAll()
	if err != nil {
		ts.Fatalf("%s is not CSV: %v", args[0], err)
	}
	for i, row := range rows {
		for j, cell := range row {
			if re.MatchString(cell) {
				if neg {
					ts.Fatalf("%s row %d cell %d %q matches %s", args[0], i+1, j+1, cell, args[1])
				}
				return
			}
		}
	}
	if !neg {
		ts.Fatalf("no cell of %s matches %s", args[0], args[1])
	}
}
