package main

import (
	"os"
	"regexp"
	"strconv"
	"time"

	"github.com/charmbracelet/lipgloss"
	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// termQueryTimeout bounds the dashboard's question to the terminal: a
// terminal that answers does so in milliseconds; one that does not (a
// serial console, some multiplexers) must not hold the responder.
const termQueryTimeout = 300 * time.Millisecond

// askTerminal tells lipgloss whether the terminal's background is dark, so
// that adaptive colours suit it. Only the dashboard asks, only when stdout
// is a terminal, and never for longer than termQueryTimeout (termenv's own
// query waits 5 s, and Bubble Tea v1 made every command ask at start-up:
// see third_party/bubbletea). A terminal that does not answer is taken to
// be dark, the common case.
func askTerminal(out *os.File, tty bool) {
	dark := true
	if tty && out != nil {
		if d, ok := queryBackground(int(out.Fd()), termQueryTimeout); ok {
			dark = d
		}
	}
	lipgloss.SetHasDarkBackground(dark)
}

var dsrReply = regexp.MustCompile(`\x1b\[\d+;\d+R`)

var oscRGB = regexp.MustCompile(`\x1b\]11;rgb:([0-9a-fA-F]{1,4})/([0-9a-fA-F]{1,4})/([0-9a-fA-F]{1,4})`)

// queryBackground sends OSC 11 (background colour) and DSR (cursor
// position, which every terminal answers) and reads the replies until the
// DSR reply or the timeout, in raw mode, restoring the terminal after.
func queryBackground(fd int, timeout time.Duration) (dark, ok bool) {
	old, err := term.MakeRaw(fd)
	if err != nil {
		return false, false
	}
	defer term.Restore(fd, old) //nolint:errcheck
	// unix.Write, not an *os.File: a second File on stdout's descriptor
	// would close it when collected.
	if _, err := unix.Write(fd, []byte("\x1b]11;?\x1b\\\x1b[6n")); err != nil {
		return false, false
	}
	deadline := time.Now().Add(timeout)
	var got []byte
	buf := make([]byte, 256)
	for len(got) < 1024 {
		left := time.Until(deadline)
		if left <= 0 {
			return false, false
		}
		var fds unix.FdSet
		fds.Set(fd)
		tv := unix.NsecToTimeval(left.Nanoseconds())
		n, err := unix.Select(fd+1, &fds, nil, nil, &tv)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return false, false
		}
		r, err := unix.Read(fd, buf)
		if err != nil || r <= 0 {
			return false, false
		}
		got = append(got, buf[:r]...)
		if m := oscRGB.FindSubmatch(got); m != nil {
			return luminance(m[1:]) < 0.5, true
		}
		if dsrReply.Match(got) {
			return false, false // answered DSR only: no background colour known
		}
	}
	return false, false
}

// luminance of an xterm rgb:RRRR/GGGG/BBBB reply, 0 (black) to 1 (white).
func luminance(parts [][]byte) float64 {
	var c [3]float64
	for i, p := range parts {
		v, _ := strconv.ParseUint(string(p), 16, 16)
		c[i] = float64(v) / float64(uint64(1)<<(4*len(p))-1)
	}
	return 0.2126*c[0] + 0.7152*c[1] + 0.0722*c[2]
}
