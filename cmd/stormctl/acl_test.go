package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lever"
)

// The printed commands are loaded into a real server as they are, and the
// users they create can do what their role allows and nothing more.
func TestACLPrintUsersWork(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t, testenv.RedisOptions{})
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	env := map[string]string{"VIEWER_PW": "v-pass", "RESPONDER_PW": "r-pass"}
	for user, role := range map[string]string{"viewer": "viewer", "responder": "responder"} {
		out, stderr, code := runCLI(t, env, "acl", "print", "--role", role, "--user", "ops-"+user, "--namespace", "prod", "--password-env", strings.ToUpper(user)+"_PW")
		if code != 0 || strings.Contains(out, "-pass") {
			t.Fatalf("acl print: %d %q %s", code, out, stderr)
		}
		var args []any
		for _, f := range strings.Fields(out) {
			args = append(args, f)
		}
		if err := admin.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("server rejected %q: %v", out, err)
		}
	}
	open := func(user, pass string) *controlplane.Store {
		s, err := controlplane.Open(ctx, config.Redis{URL: r.URL(user, pass), Namespace: "prod"}, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	l := lever.Lever{Kind: lever.Shed, Target: "checkout", Value: "20", Actor: "alice", Reason: "ingress", ExpiresAt: time.Now().Add(time.Minute)}
	res, err := open("ops-responder", "r-pass").Apply(ctx, controlplane.ApplyRequest{Lever: l})
	if err != nil || res.Entry.RedisUser != "ops-responder" {
		t.Fatalf("responder apply: %+v %v", res.Entry, err)
	}
	viewer := open("ops-viewer", "v-pass")
	if ls, err := viewer.Levers(ctx); err != nil || len(ls) != 1 {
		t.Fatalf("viewer levers: %v %v", ls, err)
	}
	_, err = viewer.Apply(ctx, controlplane.ApplyRequest{Lever: l, Expected: 1})
	var pe *controlplane.PermissionError
	if !errors.As(err, &pe) || exit.Code(err) != exit.Refused {
		t.Fatalf("viewer apply: %v", err)
	}
	// The viewer's status works in its namespace, and is refused by the
	// server in another one.
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(cfg, []byte("contexts:\n  prod:\n    redis:\n      namespace: prod\ncurrent-context: prod\n"), 0o600)
	env = map[string]string{"STORMCTL_REDIS_URL": r.URL("ops-viewer", "v-pass"), "STORMCTL_CONFIG": cfg}
	if out, stderr, code := runCLI(t, env, "status"); code != 0 || !strings.Contains(out, "shed\tcheckout\t20") {
		t.Fatalf("viewer status: %d %q %s", code, out, stderr)
	}
	env["STORMCTL_CONFIG"] = os.DevNull // no config file
	if _, stderr, code := runCLI(t, env, "status"); code != exit.Refused || !strings.Contains(stderr, "NOPERM") {
		t.Fatalf("viewer status in another namespace: %d %s", code, stderr)
	}
}

func TestACLPrintFlags(t *testing.T) {
	out, stderr, code := runCLI(t, nil, "acl", "print")
	if code != 0 || strings.Count(out, "ACL SETUSER") != len(controlplane.Roles) || !strings.Contains(out, "~stormctl:{default}:*") ||
		!strings.Contains(stderr, "cannot log in") {
		t.Fatalf("all roles: %d %q %q", code, out, stderr)
	}
	viewer := strings.Split(out, "\n")[0]
	if strings.Contains(viewer, "evalsha") || strings.Contains(viewer, "+set") || !strings.Contains(viewer, "+@read") {
		t.Fatalf("viewer may write: %s", viewer)
	}
	for _, bad := range [][]string{{"--role", "admin"}, {"--user", "x"}, {"--role", "viewer", "--password-env", "UNSET_VAR_X"}} {
		if _, _, code := runCLI(t, nil, append([]string{"acl", "print"}, bad...)...); code != exit.Usage {
			t.Errorf("acl print %v: exit %d, want 2", bad, code)
		}
	}
}
