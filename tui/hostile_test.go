package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// hostile clears the screen, sets the window title (OSC 0), writes the
// clipboard (OSC 52), and adds an 8-bit CSI and a bidi override.
const hostile = "p99\x1b[2J\x1b[H\x1b]0;pwned\x07\x1b]52;c;Y3VybCBldmls\x07\u009b8m\u202eok"

// TestDashboardShowsHostileTextAsText: a reason, actor and journal note
// written straight into a real redis-server reach the dashboard through
// the real store and stream, and the frame carries none of their control
// bytes, only their escaped text.
func TestDashboardShowsHostileTextAsText(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t, testenv.RedisOptions{})
	store, err := controlplane.Open(ctx, config.Redis{URL: r.URL("", ""), Namespace: "dash"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if _, err := store.Apply(ctx, controlplane.ApplyRequest{Lever: lever.Lever{Kind: lever.Breaker, Target: "payment-gateway",
		Value: "open", Actor: "mal\x1b]0;x\x07lory", Reason: hostile, ExpiresAt: time.Now().Add(10 * time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Append(ctx, journal.Entry{Event: journal.Note, Actor: "mallory", Reason: hostile}); err != nil {
		t.Fatal(err)
	}
	c := newClock()
	h := newHarness(t, c, Deps{Querier: stormQuerier(c.Now), Store: store, Journal: store.Journal()}, Options{Actor: "alice"}, 160, 48)
	h.send(ErrorStatus("levers: " + hostile))
	for _, focus := range []string{"", "tab", "tab"} {
		if focus != "" {
			h.key(focus)
		}
		v := h.view()
		for _, b := range []string{"\x1b", "\x07", "\u009b", "\u202e"} {
			if i := strings.Index(v, b); i >= 0 {
				t.Fatalf("the frame carries %q at %d:\n%s", b, i, v)
			}
		}
	}
	h.contains(`p99\u001b[2J\u001b[H\u001b]0;pwned`)
}

// BenchmarkFrameGuard times what the frame guard adds to each redraw: the
// guard over a drawn, styled 200×60 frame, interleaved with drawing it,
// reported as a share of the draw (frame_share), so that load on the
// machine cancels out.
func BenchmarkFrameGuard(b *testing.B) {
	// Styled as on a real terminal, so the guard walks every SGR sequence.
	lipgloss.SetColorProfile(termenv.TrueColor)
	defer lipgloss.SetColorProfile(termenv.Ascii)
	h, _, _ := benchModel(b)
	if !strings.Contains(h.m.View(), "\x1b[") {
		b.Fatal("the frame carries no styles")
	}
	var draw, guard time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		v := h.m.View()
		t1 := time.Now()
		_ = sanitize.Frame(v)
		guard += time.Since(t1)
		draw += t1.Sub(t0)
	}
	b.ReportMetric(float64(guard)/float64(draw), "frame_share")
}
