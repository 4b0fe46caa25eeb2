package common

import (
	"testing"
	"time"
)

// Time left rounds up: a 1.5 s TTL reads 2s, never 1s, and only an
// expired lever reads "expiring".
func TestLeftRoundsUp(t *testing.T) {
	for d, want := range map[time.Duration]string{
		1500 * time.Millisecond: "2s",
		time.Second:             "1s",
		time.Millisecond:        "1s",
		0:                       "expiring",
		29*time.Minute + 11*time.Second + time.Millisecond: "29m12s",
		time.Hour + 5*time.Minute + 30*time.Second:         "1h05m",
	} {
		if got := Left(d); got != want {
			t.Errorf("Left(%v) = %q, want %q", d, got, want)
		}
	}
}
