// Package keymap is the dashboard's one keymap. Every key the dashboard
// answers to is a binding here with its help text; the help view and the
// footer are generated from it, and --read-only disables the mutating
// bindings, which hides them from both.
package keymap

import "github.com/charmbracelet/bubbles/key"

// KeyMap is every binding of the dashboard.
type KeyMap struct {
	Quit, Help, Filter, Refresh key.Binding
	Report                      key.Binding // write the HTML post-incident report
	NextFocus, PrevFocus        key.Binding
	Up, Down, Left, Right       key.Binding
	// Drill opens the selected service of the fleet view; Back returns.
	Drill, Back key.Binding
	// Group switches the fleet view's grouping: service or dependency.
	Group key.Binding

	// Mutating: disabled in read-only mode.
	RunStep, Action, Release, Extend key.Binding

	// Dialog and input.
	Submit, Cancel, NextField, PrevField, CycleLeft, CycleRight key.Binding
	// Force plans a refused action again with --force, where the refusal
	// says force would let it through (the evidence guard).
	Force key.Binding
}

// PredictHelp is the help view's pointer to the analysis that predicts a
// storm from a call path's configuration, before it happens.
const PredictHelp = "predict: stormctl policy analyze FILE... reads every layer's retry policy and predicts the worst case (docs/policy.md)."

// DefaultKeyMap returns the bindings; readOnly disables every binding that
// could change the control plane or the journal.
func DefaultKeyMap(readOnly bool) *KeyMap {
	k := &KeyMap{
		Quit:      key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Help:      key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Filter:    key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter by service")),
		Refresh:   key.NewBinding(key.WithKeys("ctrl+r"), key.WithHelp("ctrl+r", "refresh now")),
		Report:    key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "write the HTML incident report")),
		NextFocus: key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next section")),
		PrevFocus: key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous section")),
		Up:        key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:      key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		Left:      key.NewBinding(key.WithKeys("left", "h"), key.WithHelp("←/h", "left")),
		Right:     key.NewBinding(key.WithKeys("right", "l"), key.WithHelp("→/l", "right")),
		Drill:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "drill into service")),
		Back:      key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back to the fleet")),
		Group:     key.NewBinding(key.WithKeys("g"), key.WithHelp("g", "group by service/dependency")),

		RunStep: key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "run selected step")),
		Action:  key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "pull a lever (plan first)")),
		Release: key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "release lever")),
		Extend:  key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "extend lever")),

		Submit:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "next / confirm")),
		Cancel:     key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back / close")),
		NextField:  key.NewBinding(key.WithKeys("tab", "down"), key.WithHelp("tab", "next field")),
		PrevField:  key.NewBinding(key.WithKeys("shift+tab", "up"), key.WithHelp("shift+tab", "previous field")),
		CycleLeft:  key.NewBinding(key.WithKeys("left"), key.WithHelp("←", "previous kind")),
		CycleRight: key.NewBinding(key.WithKeys("right"), key.WithHelp("→", "next kind")),
		Force:      key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "plan again with --force (journaled as forced)")),
	}
	if readOnly {
		for _, b := range k.Mutating() {
			b.SetEnabled(false)
		}
	}
	return k
}

// Mutating returns the bindings that change the control plane or the journal.
func (k *KeyMap) Mutating() []*key.Binding {
	return []*key.Binding{&k.RunStep, &k.Action, &k.Release, &k.Extend, &k.Force}
}

// Global are the bindings that work in every section.
func (k *KeyMap) Global() []key.Binding {
	return []key.Binding{k.NextFocus, k.Filter, k.Action, k.Refresh, k.Report, k.Help, k.Quit}
}

// DialogHelp are the bindings of the action dialog.
func (k *KeyMap) DialogHelp() []key.Binding {
	return []key.Binding{k.NextField, k.CycleRight, k.Submit, k.Cancel}
}
