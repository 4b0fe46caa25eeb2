package actions

import (
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/config"
)

func TestParseValues(t *testing.T) {
	cases := []struct{ kind, in, want, err string }{
		{"retries", "off", "off", ""},
		{"retries", "cap:3", "cap:3", ""},
		{"retries", "cap:03", "cap:3", ""},
		{"retries", "cap:0", "", "from 1 to 100"},
		{"retries", "cap:x", "", "from 1 to 100"},
		{"retries", "on", "", "neither off nor cap:N"},
		{"breaker", "open", "open", ""},
		{"breaker", "closed", "", "not open"},
		{"autoscaling", "frozen", "frozen", ""},
		{"degraded", "rules-only", "rules-only", ""},
		{"degraded", "off", "", "release the action"},
		{"degraded", "Rules", "", "lower-case"},
		{"degraded", "-x", "", "lower-case"},
		{"shed", "30%", "30", ""},
		{"shed", "100", "100", ""},
		{"shed", "0", "", "from 1 to 100"},
		{"shed", "101", "", "from 1 to 100"},
	}
	for _, c := range cases {
		ks, err := ParseKind(c.kind)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ks.ParseValue(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s %q: error %v, want %q", c.kind, c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s %q = %q, %v; want %q", c.kind, c.in, got, err, c.want)
		}
	}
}

func TestParseTargets(t *testing.T) {
	cases := []struct {
		kind, in string
		want     []Target
		err      string
	}{
		{"retries", "checkout", []Target{{Name: "checkout", Service: "checkout"}}, ""},
		{"retries", "checkout->payments", []Target{{Name: "checkout->payments", Service: "checkout", Dependency: "payments"}}, ""},
		{"breaker", "payments", []Target{{Name: "payments", Dependency: "payments"}}, ""},
		{"breaker", " payments , checkout->db", []Target{{Name: "payments", Dependency: "payments"}, {Name: "checkout->db", Service: "checkout", Dependency: "db"}}, ""},
		{"shed", "checkout->payments", nil, "targets a service"},
		{"retries", "a->b->c", nil, "not allowed"},
		{"retries", "->b", nil, "empty service"},
		{"retries", "a,,b", nil, "empty target"},
		{"retries", "a,a", nil, "listed twice"},
		{"retries", `x"} or vector(1)`, nil, "not allowed"},
		{"retries", strings.Repeat("a,", 100) + "a", nil, "at most 100"},
	}
	for _, c := range cases {
		ks, _ := ParseKind(c.kind)
		got, err := ks.ParseTargets(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s %q: error %v, want %q", c.kind, c.in, err, c.err)
			}
			continue
		}
		if err != nil || len(got) != len(c.want) {
			t.Fatalf("%s %q = %+v, %v", c.kind, c.in, got, err)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s %q [%d] = %+v, want %+v", c.kind, c.in, i, got[i], c.want[i])
			}
		}
	}
}

func TestNewPolicy(t *testing.T) {
	p, err := NewPolicy(config.Policy{
		Roles: map[string]string{"carol": "commander", "dave": "oncall"}, Kinds: map[string][]string{"oncall": {"retries"}},
		Approval: []string{"autoscaling"}, Approvers: []string{"commander"}, MaxTTL: map[string]config.Duration{"shed": config.Duration(5 * time.Minute)},
	}, map[string][]string{"retries": {"retry_ratio"}})
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case p.Role("alice") != RoleResponder || !p.Allows("alice", "breaker"):
		t.Fatal("default role")
	case !p.Allows("dave", "retries") || p.Allows("dave", "shed"):
		t.Fatal("a custom role")
	case p.MayApprove("alice", "autoscaling") || !p.MayApprove("carol", "autoscaling"):
		t.Fatal("approvers")
	case !p.NeedsApproval("autoscaling") || p.NeedsApproval("retries"):
		t.Fatal("approval kinds")
	case p.MaxTTL("shed") != 5*time.Minute || p.MaxTTL("retries") != 30*time.Minute:
		t.Fatal("max TTLs")
	case p.Evidence("retries")[0] != "retry_ratio" || p.Evidence("breaker")[0] != "dependency_p99":
		t.Fatal("evidence")
	case p.BlastRadius() != 1 || p.RateLimit().PerActor != DefaultRatePerActor:
		t.Fatal("defaults")
	}
	bad := []struct {
		p   config.Policy
		ev  map[string][]string
		msg string
	}{
		{config.Policy{Approval: []string{"retry"}}, nil, "did you mean retries"},
		{config.Policy{MaxTTL: map[string]config.Duration{"breaker": config.Duration(time.Hour)}}, nil, "may only lower"},
		{config.Policy{Roles: map[string]string{"x": "admin"}}, nil, `role "admin"`},
		{config.Policy{}, map[string][]string{"shed": {}}, "at least one"},
	}
	for _, b := range bad {
		if _, err := NewPolicy(b.p, b.ev); err == nil || !strings.Contains(err.Error(), b.msg) {
			t.Errorf("%+v: %v, want %q", b.p, err, b.msg)
		}
	}
}

// FuzzParse: no input panics, and whatever parses is well formed.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"checkout->payments", "a,b,c", "->", "a->b->c", ",", "cap:3", "30%", "rules-only", "\x00", "ü->ö"} {
		f.Add("retries", s, s)
		f.Add("shed", s, s)
	}
	f.Fuzz(func(t *testing.T, kind, target, value string) {
		ks, err := ParseKind(kind)
		if err != nil {
			return
		}
		if ts, err := ks.ParseTargets(target); err == nil {
			for _, tg := range ts {
				if tg.Name == "" || strings.Contains(tg.Name, ",") || (tg.Service == "" && tg.Dependency == "") {
					t.Fatalf("%q parsed to %+v", target, tg)
				}
			}
		}
		if v, err := ks.ParseValue(value); err == nil {
			if again, err := ks.ParseValue(v); err != nil || again != v {
				t.Fatalf("%q normalised to %q, which does not parse to itself", value, v)
			}
		}
	})
}
