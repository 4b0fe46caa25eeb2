// Package common is what every dashboard component shares: the context,
// its size, the one Styles and the one KeyMap, the clock, and the
// messages by which errors and status reach the status bar.
package common

import (
	"context"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/stormctl/stormctl/tui/keymap"
	"github.com/stormctl/stormctl/tui/styles"
)

// Common is embedded in every component.
type Common struct {
	Ctx           context.Context
	Width, Height int
	Styles        *styles.Styles
	KeyMap        *keymap.KeyMap
	// Now is the clock; tests pin it.
	Now func() time.Time
	// ReadOnly hides every mutating action.
	ReadOnly bool
}

// SetSize records a component's size.
func (c *Common) SetSize(w, h int) { c.Width, c.Height = w, h }

// ErrorMsg carries an error to the status bar. Components return it from
// commands instead of failing: the dashboard never exits on an error.
type ErrorMsg struct {
	// Source says what failed, e.g. "levers" or "journal".
	Source string
	Err    error
}

// StatusMsg is a passing message for the status bar.
type StatusMsg string

// Error wraps err for the status bar; nil gives nil.
func Error(source string, err error) *ErrorMsg {
	if err == nil {
		return nil
	}
	return &ErrorMsg{Source: source, Err: err}
}

// Move returns sel moved one row by the up and down keys, within n rows.
func (c *Common) Move(msg tea.Msg, sel, n int) int {
	k, ok := msg.(tea.KeyMsg)
	switch {
	case !ok:
	case key.Matches(k, c.KeyMap.Up):
		sel--
	case key.Matches(k, c.KeyMap.Down):
		sel++
	}
	return min(max(sel, 0), max(n-1, 0))
}
