// Package iostreams carries a command's input and output streams, so that
// commands never write to os.Stdout directly and tests can capture both.
package iostreams

import (
	"bytes"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/stormctl/stormctl/internal/sanitize"
)

// IOStreams are the streams a command reads and writes. Out is for results,
// ErrOut for status and progress.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	inTTY, outTTY bool
	noColor       bool
	// rawOut is Out before Guard wrapped it (see RawOut).
	rawOut io.Writer
}

// System returns the process's own streams, detecting terminals and NO_COLOR.
func System() *IOStreams {
	_, noColor := os.LookupEnv("NO_COLOR")
	return &IOStreams{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		inTTY:   term.IsTerminal(int(os.Stdin.Fd())),
		outTTY:  term.IsTerminal(int(os.Stdout.Fd())),
		noColor: noColor || os.Getenv("TERM") == "dumb",
	}
}

// Test returns streams backed by buffers: stdin, stdout and stderr.
func Test() (*IOStreams, *bytes.Buffer, *bytes.Buffer, *bytes.Buffer) {
	in, out, errOut := &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut, noColor: true}, in, out, errOut
}

// IsStdoutTTY reports whether results go to a terminal.
func (s *IOStreams) IsStdoutTTY() bool { return s.outTTY }

// IsStdinTTY reports whether input comes from a terminal (so prompts are possible).
func (s *IOStreams) IsStdinTTY() bool { return s.inTTY }

// SetTTY overrides terminal detection, for tests.
func (s *IOStreams) SetTTY(in, out bool) { s.inTTY, s.outTTY = in, out }

// ColorEnabled reports whether output may use colour.
func (s *IOStreams) ColorEnabled() bool { return s.outTTY && !s.noColor }

// Guard makes every byte written to Out and ErrOut safe for a terminal:
// control characters other than newline and tab, C1 controls and bidi
// overrides are escaped (sanitize.Writer), so no text read from Redis,
// Prometheus or a file can clear a screen, set a title or write the
// clipboard, and JSON stays exact. It returns the flush to call at exit.
func (s *IOStreams) Guard() (flush func()) {
	if s.rawOut != nil {
		return func() {}
	}
	s.rawOut = s.Out
	out, errOut := sanitize.NewWriter(s.Out), sanitize.NewWriter(s.ErrOut)
	s.Out, s.ErrOut = out, errOut
	return func() { out.Flush(); errOut.Flush() }
}

// RawOut is the unguarded stdout, for the two writers that must not be
// rewritten: the dashboard, which draws with escape sequences and
// sanitizes the text it shows itself, and a record copied byte for byte
// into a pipe or a file (a JSON Lines export that must still verify).
func (s *IOStreams) RawOut() io.Writer {
	if s.rawOut != nil {
		return s.rawOut
	}
	return s.Out
}
