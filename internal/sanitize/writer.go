package sanitize

import (
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// Writer escapes, on the way to w, every control character but newline and
// tab (see Block): a stream of status lines, tables and JSON that carries
// text from Redis or Prometheus cannot clear a screen, set a title (OSC 0)
// or write the clipboard (OSC 52). A character split across writes is held
// until its end arrives, so the result does not depend on how the writes
// were cut; Flush writes a held incomplete one as U+FFFD.
type Writer struct {
	mu   sync.Mutex
	w    io.Writer
	held []byte // the start of a UTF-8 sequence cut by the last Write
}

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write escapes p and writes it to the underlying writer. It reports
// len(p) on success: every byte of p was consumed, escaped or held.
func (s *Writer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data := p
	if len(s.held) > 0 {
		data = append(s.held, p...)
		s.held = nil
	}
	// Hold back a trailing sequence that may still be completed.
	if cut := incompleteTail(data); cut < len(data) {
		s.held = append([]byte(nil), data[cut:]...)
		data = data[:cut]
	}
	if len(data) == 0 {
		return len(p), nil
	}
	str := string(data)
	if clean(str, keepLayout) {
		_, err := s.w.Write(data)
		return len(p), err
	}
	var b strings.Builder
	b.Grow(len(str) + 16)
	escape(&b, str, keepLayout)
	_, err := io.WriteString(s.w, b.String())
	return len(p), err
}

// Flush writes a held, never completed character as U+FFFD per byte, as
// Block would.
func (s *Writer) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.held) == 0 {
		return nil
	}
	var b strings.Builder
	escape(&b, string(s.held), keepLayout)
	s.held = nil
	_, err := io.WriteString(s.w, b.String())
	return err
}

// incompleteTail returns where a final, incomplete but still possible
// UTF-8 sequence begins in p, or len(p) when there is none.
func incompleteTail(p []byte) int {
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax+1; i-- {
		if !utf8.RuneStart(p[i]) {
			continue
		}
		if !utf8.FullRune(p[i:]) {
			return i
		}
		break
	}
	return len(p)
}
