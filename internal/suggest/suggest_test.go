package suggest

import (
	"slices"
	"strings"
	"testing"
)

func TestClosest(t *testing.T) {
	names := []string{"amplification", "retry_ratio", "retries_per_request", "checkout", "checkout-api", "payments"}
	cases := map[string][]string{
		"amplificaton": {"amplification"},
		"retry_ration": {"retry_ratio"},
		"checkot":      {"checkout"},
		"payment":      {"payments"},
		"zzzzzz":       {},
		"checkout":     {"checkout-api"},
		"chekout":      {"checkout"},
		"retries_per":  {"retries_per_request"},
	}
	for in, want := range cases {
		if got := Closest(in, names); !slices.Equal(got, want) {
			t.Errorf("Closest(%q) = %v, want %v", in, got, want)
		}
	}
	long := strings.Repeat("x", 10000)
	if got := Closest(long, names); len(got) != 0 {
		t.Errorf("long input suggested %v", got)
	}
}
