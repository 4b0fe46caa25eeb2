package tui

import (
	"context"
	"fmt"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/stormctl/stormctl/tui/common"
)

// Reporter writes the post-incident report of an incident ("" for the
// whole journal) and returns the file's path; the command wiring's HTML
// export is one.
type Reporter interface {
	WriteReport(ctx context.Context, incident string) (path string, warnings []string, err error)
}

// reportDoneMsg is the end of writing a report.
type reportDoneMsg struct {
	path     string
	warnings []string
	err      error
}

// writeReport writes the report from a command, since it reads the
// journal and Prometheus, which must not block a key; a second press
// while one is being written does nothing.
func (m *Model) writeReport() tea.Cmd {
	if m.deps.Report == nil || m.reporting {
		return nil
	}
	m.reporting = true
	m.setStatus("writing the incident report…", false)
	r, ctx, incident := m.deps.Report, m.Ctx, m.opts.Incident
	return func() tea.Msg {
		path, warnings, err := r.WriteReport(ctx, incident)
		return reportDoneMsg{path: path, warnings: warnings, err: err}
	}
}

func (m *Model) reportDone(msg reportDoneMsg) tea.Cmd {
	m.reporting = false
	if msg.err != nil {
		return func() tea.Msg { return &common.ErrorMsg{Source: "report", Err: msg.err} }
	}
	status := "report written: " + msg.path
	switch n := len(msg.warnings); {
	case n == 1:
		status += " (warning: " + msg.warnings[0] + ")"
	case n > 1:
		status += fmt.Sprintf(" (%d warnings, first: %s)", n, msg.warnings[0])
	}
	m.setStatus(status, false)
	return nil
}
