package flagd

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/lever"
)

// FuzzRender: whatever Redis holds, the rendered configuration never
// panics and always passes flagd's evaluator and the native match, and a
// selector of any text either parses or is refused.
func FuzzRender(f *testing.F) {
	f.Add(uint8(0), "checkout->payments", "off", uint8(1), "checkout", "cap:3", "service=checkout")
	f.Add(uint8(1), "payments", "open", uint8(4), "search", "30", "")
	f.Add(uint8(3), "a\x1b[31m", "on\n", uint8(2), "x->", "frozen", "dependency=payments,service=a")
	v, err := NewValidator()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, k1 uint8, t1, v1 string, k2 uint8, t2, v2, selector string) {
		kinds := append(lever.Kinds, "bogus")
		in := Input{Levers: []lever.Lever{
			lv(kinds[int(k1)%len(kinds)], t1, v1, 1),
			lv(kinds[int(k2)%len(kinds)], t2, v2, 2),
		}}
		sel, err := ParseSelector(selector)
		if err != nil {
			sel = Selector{}
		}
		raw := Render(in, sel).Marshal()
		if err := v.Validate(raw, in, sel); err != nil {
			t.Fatalf("levers %+v selector %q: %v\n%s", in.Levers, selector, err, raw)
		}
	})
}

// FuzzParseInput: fail-safe flags, selectors and OFREP bodies are user or
// client input: they parse or are refused, never panic, and an accepted
// fail-safe has its flag's type.
func FuzzParseInput(f *testing.F) {
	f.Add("stormctl.degraded.mode=on")
	f.Add("stormctl.shed.percent=x")
	f.Add(`{"context":{"service":"a"}}`)
	f.Add("service=checkout,dependency=\x00")
	f.Fuzz(func(t *testing.T, s string) {
		if key, v, err := ParseFailSafe(s); err == nil {
			fl, _ := lever.Lookup(key)
			if _, ok := fl.Coerce(v); !ok {
				t.Fatalf("ParseFailSafe(%q) = %T, not a %s", s, v, fl.Type)
			}
		}
		if sel, err := ParseSelector(s); err == nil {
			if again, err := ParseSelector(sel.String()); err != nil || again != sel {
				t.Fatalf("selector %q does not round-trip: %v %v", s, again, err)
			}
		}
		r := httptest.NewRequest("POST", "/ofrep/v1/evaluate/flags", strings.NewReader(s))
		_, _, _ = ofrepContext(r, ofrepLimits())
	})
}
