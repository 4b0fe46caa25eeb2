package main

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/stormctl/stormctl/internal/testenv"
)

// TestPlaybookLabScripts runs the rehearsals in testdata/script/playbook-lab:
// each starts `stormctl lab run --serve` in the background on a scenario,
// with its levers in a real redis-server, and runs playbooks against it as
// a responder would. The lab uses the control plane's default namespace, so
// the scripts share one (the levers of one do not outlive it by design of
// each script: it releases what it pulls, or the TTL does).
func TestPlaybookLabScripts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the storm lab and a redis-server for a minute")
	}
	rd := testenv.StartRedis(t, testenv.RedisOptions{})
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script/playbook-lab",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			path := filepath.Join(env.WorkDir, "config.yaml")
			if err := os.WriteFile(path, []byte("contexts:\n  lab: {}\ncurrent-context: lab\n"), 0o600); err != nil {
				return err
			}
			env.Setenv("STORMCTL_CONFIG", path)
			env.Setenv("STORMCTL_REDIS_URL", rd.URL("", ""))
			env.Setenv("LAB_ADDR", "127.0.0.1:"+strconv.Itoa(testenv.FreePort(t)))
			env.Setenv("STORMCTL_ACTOR", "alice")
			env.Setenv("XDG_STATE_HOME", filepath.Join(env.WorkDir, "state"))
			env.Setenv("NO_COLOR", "1")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){"exits": cmdExits},
	})
}
