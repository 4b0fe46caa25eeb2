package controlplane

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/testenv"
)

func TestParseEndpointForms(t *testing.T) {
	cases := []struct {
		url, addrs, master, display string
		tls                         bool
	}{
		{"redis://localhost", "localhost:6379", "", "redis://localhost", false},
		{"rediss://ops:pw@cache.internal:6380", "cache.internal:6380", "", "rediss://ops:xxxxx@cache.internal:6380", true},
		{"redis://ops:pw@10.0.0.1:7000?addr=10.0.0.2:7000&addr=10.0.0.3:7000", "10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000", "", "redis://ops:xxxxx@10.0.0.1:7000", false},
		{"redis+sentinel://ops:pw@s1,s2:26380/mymaster", "s1:26379,s2:26380", "mymaster", "redis+sentinel://ops:xxxxx@s1,s2:26380", false},
		{"redis://[::1]:6390", "[::1]:6390", "", "redis://[::1]:6390", false},
		{"redis://cache.internal:6379/0", "cache.internal:6379", "", "redis://cache.internal:6379/0", false},
		{"rediss://ops:pw@cache.internal/0", "cache.internal:6379", "", "rediss://ops:xxxxx@cache.internal/0", true},
	}
	for _, c := range cases {
		ep, err := parseEndpoint(config.Redis{URL: c.url}, func(string) string { return "" })
		if err != nil {
			t.Fatalf("%s: %v", c.url, err)
		}
		if got := strings.Join(ep.opts.Addrs, ","); got != c.addrs || ep.opts.MasterName != c.master ||
			ep.display != c.display || (ep.opts.TLSConfig != nil) != c.tls {
			t.Errorf("%s: addrs %s master %q display %s tls %v", c.url, got, ep.opts.MasterName, ep.display, ep.opts.TLSConfig != nil)
		}
	}
	for _, bad := range []string{"", "http://x", "redis://x/1", "redis://x?db=2", "redis+sentinel://x", "redis://x:1%"} {
		if _, err := parseEndpoint(config.Redis{URL: bad}, func(string) string { return "" }); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestDatabaseNumber: the standard /0 is accepted, and another database is
// refused with the reason, not a bare "remove the path".
func TestDatabaseNumber(t *testing.T) {
	for url, want := range map[string]string{
		"redis://x:6379/1":   "database 1 refused: stormctl keeps levers in database 0",
		"redis://x:6379/15/": "path \"/15/\" is not a database number",
		"redis://x/cache":    "path \"/cache\" is not a database number",
		"redis://x/-0":       "is not a database number",
	} {
		_, err := parseEndpoint(config.Redis{URL: url}, func(string) string { return "" })
		if err == nil || !strings.Contains(err.Error(), want) || exit.Code(err) != exit.Usage {
			t.Errorf("%s: %v (exit %d), want %q", url, err, exit.Code(err), want)
		}
	}
	// /0 reaches a real server and works.
	r := testenv.StartRedis(t, testenv.RedisOptions{})
	s, err := Open(context.Background(), config.Redis{URL: r.URL("", "") + "/0", Namespace: "db0"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Apply(context.Background(), ApplyRequest{Lever: retriesLever("checkout", "off", time.Minute)})
	if err != nil || res.Version != 1 {
		t.Fatalf("apply through redis://…/0: %+v %v", res, err)
	}
}

func TestPasswordSources(t *testing.T) {
	env := func(k string) string { return map[string]string{"PW": "from-env"}[k] }
	ep, _ := parseEndpoint(config.Redis{URL: "redis://u@h", PasswordEnv: "PW"}, env)
	if ep.opts.Password != "from-env" || ep.opts.Username != "u" || strings.Contains(ep.display, "from-env") {
		t.Fatalf("env password: %+v %s", ep.opts, ep.display)
	}
	ep, _ = parseEndpoint(config.Redis{URL: "redis://u:in-url@h", PasswordEnv: "PW"}, env)
	if ep.opts.Password != "in-url" {
		t.Fatalf("URL password should win, got %q", ep.opts.Password)
	}
}

func FuzzParseEndpoint(f *testing.F) {
	for _, s := range []string{"redis://u:SECRET@h:1", "rediss://u:SECRET@h?addr=x:1", "redis+sentinel://u:SECRET@a,b/m",
		"redis://u:SECRET@[::1", "redis://u:SECRET@h/%zz", "SECRET", "redis://:SECRET@h?x=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		ep, err := parseEndpoint(config.Redis{URL: raw}, func(string) string { return "" })
		if err != nil {
			if strings.Contains(raw, "SECRET") && strings.Contains(raw, "@") && strings.Contains(err.Error(), "SECRET") &&
				strings.Index(raw, "SECRET") < strings.LastIndex(raw, "@") {
				t.Fatalf("error shows the password: %v", err)
			}
			return
		}
		if ep.password != "" && strings.Contains(ep.display, ep.password) && !strings.Contains(ep.display, "xxxxx") {
			t.Fatalf("display %q shows the password", ep.display)
		}
	})
}
