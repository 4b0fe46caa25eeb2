package tui

import "testing"

// A lab's clock shows in the header and follows the lab on every redraw.
func TestHeaderShowsTheLabClock(t *testing.T) {
	w := newWorld()
	text := "lab 0:40 · payment-gateway fault in 1:20"
	h := w.open(t, Options{Context: "demo", Clock: func() string { return text }}, 200, 60)
	h.contains(text)
	text = "lab 2:10 · payment-gateway fault for 0:29 more"
	h.contains(text)
	h.lacks("fault in 1:20")
	plain := w.open(t, Options{Context: "prod"}, 200, 60)
	plain.lacks("lab ")
}

// At 80×24 the header keeps the lab's clock and countdown whole: the
// incident id is what a narrow terminal cuts.
func TestNarrowHeaderKeepsTheLabClock(t *testing.T) {
	w := newWorld()
	text := "lab 3:45 · payment-gateway fault ended 1:05 ago"
	h := w.open(t, Options{Context: "demo", Actor: "demo", Incident: "01M8SSRX24T2ABBJW2QV6W7C1Z",
		Clock: func() string { return text }}, 80, 24)
	h.contains(text)
	h.contains("prom ")
	wide := w.open(t, Options{Context: "demo", Actor: "demo", Incident: "01M8SSRX24T2ABBJW2QV6W7C1Z",
		Clock: func() string { return text }}, 200, 60)
	wide.contains("incident 01M8SSRX24T2ABBJW2QV6W7C1Z  actor demo  " + text)
}
