package lab

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/lab/promapi"
	"github.com/stormctl/stormctl/lab/sim"
)

func TestEpochFor(t *testing.T) {
	now := time.Unix(10_000, 0)
	for _, c := range []struct {
		speed float64
		want  time.Duration // before now
	}{{0, 15 * time.Minute}, {1, 0}, {10, 15 * time.Minute * 9 / 10}, {0.5, 0}} {
		if got := now.Sub(epochFor(now, 15*time.Minute, c.speed)); got != c.want {
			t.Errorf("speed %v: epoch %s before now, want %s", c.speed, got, c.want)
		}
	}
}

// A paced run faster than real time never stamps a sample ahead of the wall
// clock, ends about now, and its API answers "now" at the lab's present.
func TestPacedRunNeverAheadOfTheWallClock(t *testing.T) {
	sc, err := sim.Find("payments-slow")
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(Options{Scenario: sc, Seed: 1, Until: time.Minute, Speed: 60})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	srv, err := promapi.Serve("127.0.0.1:0", l.Handler())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	done := make(chan error, 1)
	go func() { done <- l.Run(context.Background()) }()
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		case <-time.After(20 * time.Millisecond):
		}
		if ahead := time.Until(l.Now()); ahead > 0 {
			t.Fatalf("the lab's present is %s ahead of the wall clock", ahead)
		}
		if max := l.DB.Store.MaxTime(); max > time.Now().UnixMilli() {
			t.Fatalf("a sample is stamped %dms ahead of the wall clock", max-time.Now().UnixMilli())
		}
	}
	if behind := time.Since(l.Now()); behind > time.Second {
		t.Errorf("the run ended %s behind the wall clock, want about now", behind)
	}
	// No time given: evaluated at the lab's present (its last sample).
	resp, err := http.PostForm(srv.URL+"/api/v1/query", url.Values{"query": {"timestamp(stormctl_replicas)"}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	want := `"` + formatSeconds(l.Now()) + `"`
	if !strings.Contains(string(body), want) {
		t.Errorf("query at no time: %s, want the last sample's timestamp %s", body, want)
	}
}

// formatSeconds renders t's millisecond as a PromQL sample value.
func formatSeconds(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1e3, 'f', -1, 64)
}
