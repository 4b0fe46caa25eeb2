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
