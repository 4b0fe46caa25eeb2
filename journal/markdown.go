package journal

import (
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/sanitize"
)

const mdTime = "2006-01-02 15:04:05"

// timeline writes the Markdown post-incident timeline. It holds only the
// actions still active at the current point of the record (at most one per
// lever), so memory stays flat however many entries stream through.
type timeline struct {
	w     io.Writer
	group string
	open  map[string]LeverState // action id → lever it holds
	kinds map[string]string     // action id → "kind target"
}

func exportMarkdown(w io.Writer, entries iter.Seq2[Entry, error], f Filter) (int, error) {
	t := &timeline{w: w, group: "\x01", // matches no entry, so the first row opens a group
		open: map[string]LeverState{}, kinds: map[string]string{}}
	title := "Post-incident timeline"
	if f.Incident != "" {
		title += ": incident " + sanitize.Line(f.Incident)
	}
	fmt.Fprintf(w, "# %s\n\nTimes are UTC. Each action shows who took it, why, on what evidence, and how it ended.\n", title)
	n, err := each(entries, f, func(e Entry) error { t.row(e); return nil })
	if err != nil {
		return n, err
	}
	t.tail()
	_, err = fmt.Fprintf(w, "\n_%d entries._\n", n)
	return n, err
}

func (t *timeline) row(e Entry) {
	if g := e.Playbook + "\x00" + e.PlaybookVersion; g != t.group {
		e.Playbook, e.PlaybookVersion = sanitize.Line(e.Playbook), sanitize.Line(e.PlaybookVersion)
		t.group = g
		switch {
		case e.Playbook == "":
			fmt.Fprintf(t.w, "\n## Ad-hoc actions\n\n")
		case e.PlaybookVersion != "":
			fmt.Fprintf(t.w, "\n## Playbook `%s` (version %s)\n\n", e.Playbook, e.PlaybookVersion)
		default:
			fmt.Fprintf(t.w, "\n## Playbook `%s`\n\n", e.Playbook)
		}
		fmt.Fprintf(t.w, "| Time | Actor | What | Why | Evidence | Outcome |\n|---|---|---|---|---|---|\n")
	}
	cells := []string{e.Time.UTC().Format(mdTime), actorText(e), what(e), e.Reason, evidenceText(e.Evidence, "<br>"), t.outcome(e)}
	for i, c := range cells {
		cells[i] = cell(c)
	}
	fmt.Fprintf(t.w, "| %s |\n", strings.Join(cells, " | "))
}

// outcome says what the entry did and, for an end, which action it ended.
func (t *timeline) outcome(e Entry) string {
	var parts []string
	switch e.Event {
	case ActionApplied:
		parts = append(parts, e.Outcome)
		if p := e.Previous; p != nil {
			parts = append(parts, fmt.Sprintf("superseded action `%s` of %s", p.ActionID, p.Actor))
			t.close(p.ActionID)
		}
		if e.New != nil {
			t.hold(e, *e.New)
		}
	case ActionReleased, ActionExpired:
		if p := e.Previous; p != nil {
			parts = append(parts, fmt.Sprintf("ended action `%s` of %s (applied %s, active %s)", p.ActionID, p.Actor,
				p.CreatedAt.UTC().Format(mdTime), e.Time.Sub(p.CreatedAt).Round(time.Second)))
			t.close(p.ActionID)
		}
		if n := e.New; n != nil {
			parts = append(parts, fmt.Sprintf("restored action `%s` of %s", n.ActionID, n.Actor))
			t.hold(e, *n)
		}
	case ActionExtended:
		parts = append(parts, e.Outcome)
		if n := e.New; n != nil {
			t.hold(e, *n)
		}
	default:
		parts = append(parts, e.Outcome)
		if isActuation(e) {
			parts = append(parts, changesText(e.Changes))
		}
	}
	if e.Error != "" {
		parts = append(parts, e.Error)
	}
	return strings.Join(slices.DeleteFunc(parts, func(s string) bool { return s == "" }), "; ")
}

func (t *timeline) hold(e Entry, s LeverState) {
	t.open[s.ActionID] = s
	t.kinds[s.ActionID] = fmt.Sprintf("%s `%s`", e.Kind, e.Target)
}

func (t *timeline) close(id string) {
	delete(t.open, id)
	delete(t.kinds, id)
}

// tail lists the actions the record leaves active.
func (t *timeline) tail() {
	if len(t.open) == 0 {
		return
	}
	fmt.Fprintf(t.w, "\n## Still active at the end of this record\n\n")
	ids := make([]string, 0, len(t.open))
	for id := range t.open {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		s := t.open[id]
		fmt.Fprintf(t.w, "- %s\n", sanitize.Line(fmt.Sprintf("%s = `%s`: action `%s` of %s, until %s", t.kinds[id], s.Value, id, s.Actor, s.ExpiresAt.UTC().Format(mdTime))))
	}
}

func actorText(e Entry) string {
	a := e.Who()
	if e.RedisUser != "" && e.RedisUser != e.Actor {
		a += " (redis user " + e.RedisUser + ")"
	}
	if e.Offline {
		a += " (offline)"
	}
	if r := e.Restores; r != nil {
		a += " (restoring " + r.Actor + "'s lost entry " + r.Entry + ")"
	}
	return a
}

// what is the one-line description of an entry.
func what(e Entry) string {
	if isActuation(e) {
		return actuationWhat(e)
	}
	lever := fmt.Sprintf("%s `%s` on `%s`", e.Kind, e.Value, e.Target)
	switch e.Event {
	case ActionApplied:
		s := "**applied** " + lever
		if e.TTL != 0 {
			s += " for " + e.TTL.String()
		}
		if e.Forced {
			s += ", **forced** without supporting evidence"
		}
		return s
	case ActionExtended:
		if e.New != nil {
			return fmt.Sprintf("**extended** %s until %s", lever, e.New.ExpiresAt.UTC().Format(mdTime))
		}
	case IncidentOpened, IncidentClosed:
		s := fmt.Sprintf("**%s incident** `%s`", strings.TrimPrefix(string(e.Event), "incident."), e.Incident)
		if e.Value != "" {
			s += ": " + e.Value
		}
		return s
	case Note:
		return "note"
	case PlaybookStarted, PlaybookFinished:
		return fmt.Sprintf("%s playbook `%s`", strings.TrimPrefix(string(e.Event), "playbook."), e.Playbook)
	case PlaybookPassed, PlaybookFailed, PlaybookSkipped:
		return fmt.Sprintf("step `%s` %s", e.Step, strings.TrimPrefix(string(e.Event), "playbook.step."))
	}
	return fmt.Sprintf("**%s** %s", strings.TrimPrefix(string(e.Event), "action."), lever)
}

var cellEscaper = strings.NewReplacer("|", `\|`, "\r\n", "<br>", "\n", "<br>", "\r", "<br>")

// cell is one table cell: line breaks become <br>, pipes are escaped, and
// any other control character (an ESC, OSC 52, a bidi override) is shown
// as text, so the timeline cannot act on a terminal that prints it.
func cell(s string) string { return sanitize.Line(cellEscaper.Replace(s)) }
