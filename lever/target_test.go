package lever

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMatchMostSpecificFirst(t *testing.T) {
	held := map[Scope]string{}
	get := func(sc Scope) (string, bool) { v, ok := held[sc]; return v, ok }
	set := func(kind Kind, target, v string) { held[ScopeOf(kind, target)] = v }

	if _, ok := Match(Retries, "checkout", "payments", get); ok {
		t.Fatal("match with no levers")
	}
	set(Breaker, "payments", "dependency")
	set(Retries, "checkout", "service")
	set(Retries, "checkout->payments", "edge")
	cases := []struct {
		kind         Kind
		service, dep string
		want         string
		ok           bool
	}{
		{Retries, "checkout", "payments", "edge", true},
		{Retries, "checkout", "ledger", "service", true},
		{Retries, "checkout", "", "service", true},
		{Retries, "search", "payments", "", false},
		{Breaker, "search", "payments", "dependency", true},
		{Breaker, "", "payments", "dependency", true},
		{Breaker, "payments", "", "", false}, // a bare breaker target is a dependency, not a caller
		{Retries, "", "", "", false},
	}
	for _, c := range cases {
		got, ok := Match(c.kind, c.service, c.dep, get)
		if got != c.want || ok != c.ok {
			t.Errorf("Match(%s, %q, %q) = %q, %v; want %q, %v", c.kind, c.service, c.dep, got, ok, c.want, c.ok)
		}
	}
}

func TestScopeRoundTrip(t *testing.T) {
	for _, c := range []struct {
		kind   Kind
		target string
		want   Scope
	}{
		{Retries, "checkout", Scope{Retries, "checkout", ""}},
		{Retries, "checkout->payments", Scope{Retries, "checkout", "payments"}},
		{Breaker, "payments", Scope{Breaker, "", "payments"}},
		{Breaker, "checkout->payments", Scope{Breaker, "checkout", "payments"}},
	} {
		got := ScopeOf(c.kind, c.target)
		if got != c.want || got.Target() != c.target {
			t.Errorf("ScopeOf(%s, %q) = %+v (target %q)", c.kind, c.target, got, got.Target())
		}
	}
}

// FuzzParseTarget: any text is a valid target of the kind's form, named
// exactly as written and mapping back to itself, or an error.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"checkout", "checkout->payments", "->x", "a->b->c", "a b", "\x1b[2J", strings.Repeat("a", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, spec := range Specs {
			tg, err := spec.ParseTarget(s)
			if err != nil {
				continue
			}
			if tg.Name != s || ScopeOf(spec.Kind, s).Target() != s {
				t.Fatalf("%s %q parsed as %+v", spec.Kind, s, tg)
			}
			for _, r := range s {
				if !NameChar(r) && r != '-' && r != '>' {
					t.Fatalf("%s %q accepted with %q", spec.Kind, s, r)
				}
			}
		}
	})
}

// Quote echoes any argument short and escaped: at most MaxEcho bytes of it,
// never a raw control character, and valid UTF-8.
func FuzzQuote(f *testing.F) {
	f.Add("checkout->payments")
	f.Add(strings.Repeat("a", 10<<10))
	f.Add("\x1b]0;pwned\x07" + strings.Repeat("é", 40))
	f.Fuzz(func(t *testing.T, s string) {
		q := Quote(s)
		if !utf8.ValidString(q) {
			t.Fatalf("invalid UTF-8: %q", q)
		}
		for _, r := range q {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("raw control character in %q", q)
			}
		}
		body := strings.TrimSuffix(q, "…")
		un, err := strconv.Unquote(body)
		if err != nil || len(un) > MaxEcho || !strings.HasPrefix(s, un) {
			t.Fatalf("Quote(%.80q) = %.200q", s, q)
		}
	})
}
