// Package styles holds the dashboard's one Styles value. Every component
// renders through it, so colours, borders and NO_COLOR behave the same
// everywhere.
package styles

import (
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// Styles are the dashboard's lipgloss styles.
type Styles struct {
	// NoColor is true when the colour profile is plain text (NO_COLOR, a
	// dumb terminal or a pinned test profile); components then mark
	// states with words and symbols only, which they do anyway.
	NoColor bool

	App         lipgloss.Style
	Header      lipgloss.Style
	HeaderLabel lipgloss.Style
	// Border and BorderFocused draw section frames, in the colours of
	// Frame and FrameFocused; a focused frame is also thicker, so focus
	// shows without colour.
	Border, BorderFocused lipgloss.Border
	Frame, FrameFocused   lipgloss.Style
	Title                 lipgloss.Style
	TitleFocused          lipgloss.Style
	Selected              lipgloss.Style // the selected row of the focused section
	Muted                 lipgloss.Style
	Bold                  lipgloss.Style

	OK, Warn, Crit lipgloss.Style // threshold states
	NoData, Stale  lipgloss.Style
	Healthy, Down  lipgloss.Style // server health

	StatusBar   lipgloss.Style
	StatusError lipgloss.Style
	StatusInfo  lipgloss.Style

	Dialog      lipgloss.Style
	DialogTitle lipgloss.Style
	Label       lipgloss.Style
	Refused     lipgloss.Style
	Passed      lipgloss.Style

	HelpKey, HelpDesc lipgloss.Style
}

// DefaultStyles returns the dashboard's styles for the current colour
// profile (lipgloss honours NO_COLOR).
func DefaultStyles() *Styles {
	noColor := lipgloss.ColorProfile() == termenv.Ascii
	accent := lipgloss.AdaptiveColor{Light: "#5A56E0", Dark: "#7D79F6"}
	muted := lipgloss.AdaptiveColor{Light: "#8A8A8A", Dark: "#6C6C6C"}
	red := lipgloss.AdaptiveColor{Light: "#D7005F", Dark: "#FF5F87"}
	amber := lipgloss.AdaptiveColor{Light: "#AF8700", Dark: "#FFD75F"}
	green := lipgloss.AdaptiveColor{Light: "#008700", Dark: "#5FD787"}

	s := &Styles{NoColor: noColor}
	s.App = lipgloss.NewStyle()
	s.Header = lipgloss.NewStyle().Bold(true)
	s.HeaderLabel = lipgloss.NewStyle().Foreground(muted)
	s.Border, s.BorderFocused = lipgloss.RoundedBorder(), lipgloss.ThickBorder()
	s.Frame = lipgloss.NewStyle().Foreground(muted)
	s.FrameFocused = lipgloss.NewStyle().Foreground(accent)
	s.Title = lipgloss.NewStyle().Foreground(muted)
	s.TitleFocused = lipgloss.NewStyle().Foreground(accent).Bold(true)
	s.Selected = lipgloss.NewStyle().Reverse(true)
	s.Muted = lipgloss.NewStyle().Foreground(muted)
	s.Bold = lipgloss.NewStyle().Bold(true)

	s.OK = lipgloss.NewStyle().Foreground(green)
	s.Warn = lipgloss.NewStyle().Foreground(amber).Bold(true)
	s.Crit = lipgloss.NewStyle().Foreground(red).Bold(true)
	s.NoData = lipgloss.NewStyle().Foreground(muted).Italic(true)
	s.Stale = lipgloss.NewStyle().Foreground(amber).Italic(true)
	s.Healthy = lipgloss.NewStyle().Foreground(green)
	s.Down = lipgloss.NewStyle().Foreground(red).Bold(true)

	s.StatusBar = lipgloss.NewStyle()
	s.StatusError = lipgloss.NewStyle().Foreground(red).Bold(true)
	s.StatusInfo = lipgloss.NewStyle().Foreground(green)

	s.Dialog = lipgloss.NewStyle().Border(lipgloss.DoubleBorder()).BorderForeground(accent).Padding(0, 1)
	s.DialogTitle = lipgloss.NewStyle().Bold(true).Foreground(accent)
	s.Label = lipgloss.NewStyle().Foreground(muted)
	s.Refused = lipgloss.NewStyle().Foreground(red).Bold(true)
	s.Passed = lipgloss.NewStyle().Foreground(green)

	s.HelpKey = lipgloss.NewStyle().Foreground(accent)
	s.HelpDesc = lipgloss.NewStyle().Foreground(muted)
	return s
}
