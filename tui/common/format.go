package common

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/stormctl/stormctl/tui/styles"
)

// Left is a time left for humans: "29m12s", "1h05m", "expiring". Seconds
// round up, so a lever never looks nearer its end than it is (1.5 s left
// is "2s", never "1s").
func Left(d time.Duration) string {
	switch {
	case d <= 0:
		return "expiring"
	case d >= time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return CeilSecond(d).String()
}

// CeilSecond rounds d up to a whole second.
func CeilSecond(d time.Duration) time.Duration {
	if t := d.Truncate(time.Second); t != d {
		return t + time.Second
	}
	return d
}

// Ago is an age for humans: "now", "12s ago", "3m ago".
func Ago(d time.Duration) string {
	switch {
	case d < time.Second:
		return "now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	}
	return fmt.Sprintf("%dh ago", int(d.Hours()))
}

// Fit truncates s to width w display cells (with an ellipsis) and pads it
// with spaces to exactly w.
func Fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	n := ansi.StringWidth(s)
	if n > w {
		s = ansi.Truncate(s, w, "…")
		n = ansi.StringWidth(s)
	}
	return s + strings.Repeat(" ", w-n)
}

// Frame draws a section of exactly w×h cells: a border with the title in
// its top edge and lines inside, cut or padded to fit. A focused frame
// uses the focused border and colour.
func Frame(st *styles.Styles, title string, lines []string, w, h int, focused bool) string {
	if w < 4 || h < 2 {
		return ""
	}
	b, fs, ts := st.Border, st.Frame, st.Title
	if focused {
		b, fs, ts = st.BorderFocused, st.FrameFocused, st.TitleFocused
	}
	inner := w - 2
	var sb strings.Builder
	sb.Grow(w * h * 2)
	head := ""
	if title != "" {
		head = ts.Render(ansi.Truncate(" "+title+" ", inner-1, "…"))
	}
	fill := inner - 1 - ansi.StringWidth(head)
	sb.WriteString(fs.Render(b.TopLeft + b.Top))
	sb.WriteString(head)
	sb.WriteString(fs.Render(strings.Repeat(b.Top, max(fill, 0)) + b.TopRight))
	left, right := fs.Render(b.Left), fs.Render(b.Right)
	for i := 0; i < h-2; i++ {
		line := ""
		if i < len(lines) {
			line = lines[i]
		}
		sb.WriteByte('\n')
		sb.WriteString(left)
		sb.WriteString(Fit(line, inner))
		sb.WriteString(right)
	}
	sb.WriteByte('\n')
	sb.WriteString(fs.Render(b.BottomLeft + strings.Repeat(b.Bottom, inner) + b.BottomRight))
	return sb.String()
}

// Window returns the start of a window of n rows out of total that keeps
// sel visible, scrolling as little as possible from the previous start.
func Window(start, sel, n, total int) int {
	if n <= 0 || total <= n {
		return 0
	}
	if sel < start {
		start = sel
	}
	if sel >= start+n {
		start = sel - n + 1
	}
	return min(max(start, 0), total-n)
}

// Frame draws the component's section at its size.
func (c *Common) Frame(title string, lines []string, focused bool) string {
	return Frame(c.Styles, title, lines, c.Width, c.Height, focused)
}
