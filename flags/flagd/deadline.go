package flagd

import (
	"net/http"
	"time"
)

// DefaultWriteTimeout bounds one write to a client: a client that stops
// reading is disconnected after it, freeing its stream slot, instead of
// holding a goroutine and a slot for as long as its TCP connection lives.
const DefaultWriteTimeout = 30 * time.Second

// writeDeadlines gives every write and flush of a response its own
// deadline, so a long-lived stream is not cut while it keeps being read.
func writeDeadlines(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), d: d}, r)
	})
}

type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

func (w *deadlineWriter) arm() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.d)) }

func (w *deadlineWriter) Write(p []byte) (int, error) {
	w.arm()
	return w.ResponseWriter.Write(p)
}

// Flush implements http.Flusher, which streaming handlers need.
func (w *deadlineWriter) Flush() {
	w.arm()
	_ = w.rc.Flush()
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
