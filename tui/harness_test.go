package tui

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/stormctl/stormctl/queries"
)

// The tests pin the colour profile and the time zone, so screens are the
// same on every machine.
func init() {
	lipgloss.SetColorProfile(termenv.Ascii)
	time.Local = time.UTC
}

// harness drives a Model the way tea.Program does, synchronously: it runs
// each command, feeds its message back, parks commands that wait on a
// channel, and hands timers to the test to fire.
type harness struct {
	t       testing.TB
	m       *Model
	clock   *clock
	timers  []timerMsg
	pending []chan tea.Msg
	quit    bool
}

type timerMsg struct {
	d   time.Duration
	msg tea.Msg
}

var t0 = time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)

// clock is the tests' time, shared by the harness and the fakes.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: t0} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newHarness(t testing.TB, c *clock, deps Deps, opts Options, w, h int) *harness {
	hs := &harness{t: t, clock: c}
	opts.Now = c.Now
	opts.Rand = func() float64 { return 0.5 }
	opts.After = func(d time.Duration, fn func(time.Time) tea.Msg) tea.Cmd {
		return func() tea.Msg { return timerMsg{d: d, msg: fn(c.Now().Add(d))} }
	}
	if opts.Signals.Catalog == nil {
		opts.Signals.Catalog = catalog(t)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	hs.m = New(ctx, deps, opts)
	hs.send(tea.WindowSizeMsg{Width: w, Height: h})
	hs.exec(hs.m.Init())
	hs.settle()
	return hs
}

var (
	catOnce sync.Once
	cat     *queries.Catalog
)

func catalog(t testing.TB) *queries.Catalog {
	catOnce.Do(func() {
		var err error
		if cat, err = queries.Load(); err != nil {
			t.Fatal(err)
		}
	})
	return cat
}

func (h *harness) send(msg tea.Msg) {
	_, cmd := h.m.Update(msg)
	h.exec(cmd)
}

func (h *harness) key(keys ...string) {
	for _, k := range keys {
		h.send(keyMsg(k))
	}
}

func keyMsg(k string) tea.KeyMsg {
	switch k {
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case "shift+tab":
		return tea.KeyMsg{Type: tea.KeyShiftTab}
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case "left":
		return tea.KeyMsg{Type: tea.KeyLeft}
	case "right":
		return tea.KeyMsg{Type: tea.KeyRight}
	case "backspace":
		return tea.KeyMsg{Type: tea.KeyBackspace}
	case "ctrl+r":
		return tea.KeyMsg{Type: tea.KeyCtrlR}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
}

// typeText types s one rune at a time, as a terminal delivers it.
func (h *harness) typeText(s string) {
	for _, r := range s {
		h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
}

func (h *harness) exec(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	ch := make(chan tea.Msg, 1)
	go func() { ch <- cmd() }()
	select {
	case msg := <-ch:
		h.handle(msg)
	case <-time.After(100 * time.Millisecond):
		h.pending = append(h.pending, ch)
	}
}

func (h *harness) handle(msg tea.Msg) {
	switch msg := msg.(type) {
	case nil:
	case tea.BatchMsg:
		for _, c := range msg {
			h.exec(c)
		}
	case timerMsg:
		h.timers = append(h.timers, msg)
	case tea.QuitMsg:
		h.quit = true
	default:
		if v := reflect.ValueOf(msg); v.Kind() == reflect.Slice && v.Type().Elem() == reflect.TypeOf(tea.Cmd(nil)) {
			for i := range v.Len() {
				h.exec(v.Index(i).Interface().(tea.Cmd))
			}
			return
		}
		h.send(msg)
	}
}

// settle delivers the messages of parked commands as they finish, until
// none has finished for a short while.
func (h *harness) settle() {
	deadline := time.Now().Add(60 * time.Millisecond)
	for time.Now().Before(deadline) {
		if h.deliverReady() {
			deadline = time.Now().Add(60 * time.Millisecond)
			continue
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (h *harness) deliverReady() bool {
	for i, p := range h.pending {
		select {
		case msg := <-p:
			h.pending = append(h.pending[:i], h.pending[i+1:]...)
			h.handle(msg)
			return true
		default:
		}
	}
	return false
}

// fire delivers the pending timers whose message has the type of like,
// after moving the clock by by.
func (h *harness) fire(like tea.Msg, by time.Duration) {
	h.clock.add(by)
	var keep, due []timerMsg
	for _, tm := range h.timers {
		if reflect.TypeOf(tm.msg) == reflect.TypeOf(like) {
			due = append(due, tm)
		} else {
			keep = append(keep, tm)
		}
	}
	h.timers = keep
	for _, tm := range due {
		h.send(tm.msg)
	}
	h.settle()
}

func (h *harness) view() string { return h.m.View() }

func (h *harness) contains(want ...string) {
	h.t.Helper()
	v := h.view()
	for _, w := range want {
		if !strings.Contains(v, w) {
			h.t.Fatalf("view lacks %q:\n%s", w, v)
		}
	}
}

func (h *harness) lacks(bad ...string) {
	h.t.Helper()
	v := h.view()
	for _, b := range bad {
		if strings.Contains(v, b) {
			h.t.Fatalf("view has %q:\n%s", b, v)
		}
	}
}

// checkSize fails unless the view is exactly w×h cells.
func checkSize(t testing.TB, v string, w, h int) {
	t.Helper()
	lines := strings.Split(v, "\n")
	if len(lines) != h {
		t.Fatalf("view has %d lines, want %d:\n%s", len(lines), h, v)
	}
	for i, l := range lines {
		if n := lipgloss.Width(l); n != w {
			t.Fatalf("line %d is %d cells wide, want %d: %q", i, n, w, l)
		}
	}
}

func windowSize(w, h int) tea.WindowSizeMsg { return tea.WindowSizeMsg{Width: w, Height: h} }
