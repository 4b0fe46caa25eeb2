package controlplane

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

func aclUser(name, password string, role Role) string {
	cmd := ACLCommand(name, role, NewKeys("t"), ">"+password)
	return strings.TrimPrefix(cmd, "ACL SETUSER ")
}

func TestACLViewerIsRefusedByTheServer(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t, testenv.RedisOptions{ACL: []string{
		"default off",
		aclUser("ops-viewer", "v-secret", Viewer),
		aclUser("ops-responder", "r-secret", Responder),
		aclUser("ops-commander", "c-secret", Commander),
	}})
	responder := openStore(t, r, "ops-responder", "r-secret")
	if str := responder.String(); strings.Contains(str, "r-secret") || !strings.HasSuffix(str, "(namespace t)") {
		t.Fatalf("String() = %q", str)
	}
	if user, ok := responder.WhoAmI(ctx); user != "ops-responder" || !ok {
		t.Fatalf("whoami: %q %v", user, ok)
	}
	res := apply(t, responder, retriesLever("checkout", "off", 400*time.Millisecond))
	if res.Entry.RedisUser != "ops-responder" {
		t.Fatalf("journal records redis user %q", res.Entry.RedisUser)
	}
	commander := openStore(t, r, "ops-commander", "c-secret")
	apply(t, commander, lever.Lever{Kind: lever.Breaker, Target: "payments", Value: "open", Actor: "carol", Reason: "approve", ExpiresAt: time.Now().Add(time.Hour)})

	viewer := openStore(t, r, "ops-viewer", "v-secret")
	time.Sleep(500 * time.Millisecond) // let the retries lever expire unjournaled
	levers, err := viewer.Levers(ctx)
	if err != nil || len(levers) != 1 || levers[0].Kind != lever.Breaker {
		t.Fatalf("viewer levers: %v %v", levers, err)
	}
	before := verifyJournal(t, responder)
	cur, ver, head, err := viewer.Get(ctx, lever.Shed, "checkout")
	if err != nil {
		t.Fatal(err)
	}
	_, err = viewer.Apply(ctx, ApplyRequest{Lever: lever.Lever{Kind: lever.Shed, Target: "checkout", Value: "50", Actor: "mallory", Reason: "x", ExpiresAt: time.Now().Add(time.Hour)}, Expected: ver, Current: cur, Head: head})
	var pe *PermissionError
	if !errors.As(err, &pe) || exit.Code(err) != exit.Refused || !strings.Contains(err.Error(), "ops-viewer") {
		t.Fatalf("viewer apply: want a *PermissionError naming the user, got %v", err)
	}
	t.Logf("viewer apply: %v", err)
	if _, err := viewer.Append(ctx, journal.Entry{Event: journal.Note, Actor: "mallory"}); !errors.As(err, &pe) {
		t.Fatalf("viewer append: %v", err)
	}
	if l, _, _, _ := responder.Get(ctx, lever.Shed, "checkout"); l != nil {
		t.Fatalf("viewer's apply changed the lever: %+v", l)
	}
	// The responder's next read journals the expiry the viewer could not.
	if after := verifyJournal(t, responder); after != before+1 {
		t.Fatalf("journal went from %d to %d entries, want only the expiry", before, after)
	}
	// Outside the namespace even reads are refused.
	if err := viewer.Client().Get(ctx, "other:key").Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("viewer read outside the namespace: %v", err)
	}
}

func TestTLSWithTestCA(t *testing.T) {
	certs := testenv.NewCerts(t)
	r := testenv.StartRedis(t, testenv.RedisOptions{TLS: certs.Server()})
	cfg := config.Redis{URL: r.URL("", ""), Namespace: "t", TLS: config.TLS{CAFile: certs.CAFile, CertFile: certs.ClientCert, KeyFile: certs.ClientKey}}
	if !strings.HasPrefix(cfg.URL, "rediss://") {
		t.Fatalf("url %s", cfg.URL)
	}
	s, err := Open(context.Background(), cfg, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	apply(t, s, retriesLever("checkout", "off", time.Minute))
	verifyJournal(t, s)

	// Without the CA the server is not trusted: a clear error, no apply.
	cfg.TLS = config.TLS{}
	_, err = Open(context.Background(), cfg, func(string) string { return "" })
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("untrusted server: %v", err)
	}
}

func TestPasswordNeverPrinted(t *testing.T) {
	port := testenv.FreePort(t) // nothing listens there
	getenv := func(k string) string { return map[string]string{"REDIS_PW": "env-s3cret"}[k] }
	for _, cfg := range []config.Redis{
		{URL: "redis://ops:url-s3cret@127.0.0.1:" + strconv.Itoa(port)},
		{URL: "redis://ops@127.0.0.1:" + strconv.Itoa(port), PasswordEnv: "REDIS_PW"},
		{URL: "redis://ops:url-s3cret@127.0.0.1:" + strconv.Itoa(port) + "/3"},
		{URL: "http://ops:url-s3cret@127.0.0.1"},
		{URL: "redis://ops:url-s3cret@[::1"},
		{URL: "redis://ops:url-s3cret@127.0.0.1:" + strconv.Itoa(port), TLS: config.TLS{CAFile: "/nonexistent"}},
	} {
		_, err := Open(context.Background(), cfg, getenv)
		if err == nil {
			t.Fatalf("%s: no error", cfg.URL)
		}
		if msg := err.Error(); strings.Contains(msg, "s3cret") {
			t.Fatalf("password printed: %s", msg)
		}
		t.Log(err)
	}
}
