package queries

import (
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"7", 7 * time.Second, true},
		{" 0 ", 0, true},
		{"86400", MaxRetryAfter, true},
		{"18446744073709551615", MaxRetryAfter, true},
		{"-3", 0, false},
		{"1.5", 0, false},
		{now.Add(42 * time.Second).Format(http.TimeFormat), 42 * time.Second, true},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, true},
		{now.Add(time.Hour).Format(http.TimeFormat), MaxRetryAfter, true},
		{"Sunday, 01-Mar-26 12:00:09 GMT", 9 * time.Second, true}, // RFC 850, still allowed
		{"soon", 0, false},
	} {
		got, ok := parseRetryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"", "0", "120", "Wed, 21 Oct 2015 07:28:00 GMT", "-1", "9999999999999999999999"} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := parseRetryAfter(s, now)
		if d < 0 || d > MaxRetryAfter || (!ok && d != 0) {
			t.Fatalf("parseRetryAfter(%q) = %v, %v", s, d, ok)
		}
	})
}
