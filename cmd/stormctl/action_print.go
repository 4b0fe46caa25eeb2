package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/internal/output"
	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// actionResultJSON is actions.Result with the refusal or pending approval that
// ended it, if any.
type actionResultJSON struct {
	*actions.Result
	Error *errorJSON `json:"error,omitempty"`
}

// printResult prints an action result: -o json/yaml gives actions.Result
// (with "error" when err ended it); a table gives the guards (for a plan)
// and one row per target, with a summary on stderr.
func printResult(f *Factory, res *actions.Result, err error) error {
	if res.Advisory != "" {
		fmt.Fprintln(f.IO.ErrOut, "stormctl: note: "+sanitize.Line(res.Advisory))
	}
	return f.Print(actionResultJSON{Result: res, Error: newErrorJSON(err)}, func(tty bool) error {
		fmt.Fprintln(f.IO.ErrOut, summary(res))
		if res.Replicas != nil && *res.Replicas == 0 && res.Replicated == nil {
			// Once per command: a standalone server has nothing to confirm.
			fmt.Fprintln(f.IO.ErrOut, "replicas: 0 (standalone Redis: writes are not replicated; see docs/replication.md)")
		}
		if res.Operation == "plan" {
			tp := output.NewTable(f.IO.Out, tty, "guard", "status", "detail")
			for _, g := range res.Guards {
				tp.Row(g.Guard, g.Status, g.Detail)
			}
			if err := tp.Flush(); err != nil {
				return err
			}
			if tty {
				fmt.Fprintln(f.IO.Out)
			}
		}
		tp := output.NewTable(f.IO.Out, tty, "target", "before", "after", "left", "evidence", "journal entry")
		for _, t := range res.Targets {
			tp.Row(t.Target, leverText(t.Before), leverText(t.After), leverLeft(t.After), evidenceText(t.Evidence), t.JournalEntry)
		}
		return tp.Flush()
	})
}

func summary(res *actions.Result) string {
	targets := make([]string, len(res.Targets))
	for i, t := range res.Targets {
		targets[i] = t.Target
	}
	what := fmt.Sprintf("%s=%s on %s", res.Kind, res.Value, strings.Join(targets, ", "))
	var s string
	switch res.Operation {
	case "plan":
		s = "plan: " + what + " for " + res.TTL.String()
	case "release":
		s = "released action " + res.ActionID + " (" + what + ")"
	case "extend":
		s = "extended action " + res.ActionID + " (" + what + ") by " + res.TTL.String() + " from now"
	case "request":
		s = "requested " + what + ": request " + res.RequestID + " waits for a second person (stormctl action approve " + res.RequestID + ")"
	default:
		s = "applied " + what + " for " + res.TTL.String() + " as action " + res.ActionID
		if res.ApprovedBy != "" {
			s += ", approved by " + res.ApprovedBy
		}
	}
	if res.Replayed {
		s += " (replayed: the idempotency key had already applied it; nothing changed)"
	}
	if res.Forced {
		s += " (FORCED: no supporting evidence)"
	}
	if len(res.Unverified) > 0 {
		s += " (TARGET UNVERIFIED: " + strings.Join(res.Unverified, ", ") + ")"
	}
	if res.Incident != "" {
		s += " [incident " + res.Incident + "]"
	}
	return s
}

func leverText(l *lever.Lever) string {
	if l == nil {
		return "(normal)"
	}
	return l.Value + " by " + l.Actor
}

func leverLeft(l *lever.Lever) string {
	if l == nil {
		return ""
	}
	return left(time.Until(l.ExpiresAt))
}

func evidenceText(evs []journal.Evidence) string {
	parts := make([]string, 0, len(evs))
	for _, ev := range evs {
		if ev.Status == actions.StatusNoData {
			parts = append(parts, ev.Query+" no data")
			continue
		}
		if ev.ValueText != "" {
			parts = append(parts, fmt.Sprintf("%s %s %s", ev.Query, ev.ValueText, ev.Status))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.3g %s", ev.Query, ev.Value, ev.Status))
	}
	return strings.Join(parts, ", ")
}

func printActionList(f *Factory, list []actions.ActionInfo) error {
	if list == nil {
		list = []actions.ActionInfo{}
	}
	return f.Print(list, func(tty bool) error {
		if len(list) == 0 {
			fmt.Fprintln(f.IO.ErrOut, "no actions: normal operation")
			return nil
		}
		tp := output.NewTable(f.IO.Out, tty, "action", "request", "state", "kind", "targets", "value", "actor", "reason", "incident", "left")
		for _, a := range list {
			l := ""
			if a.State == actions.StateActive || a.State == actions.StatePending || a.State == actions.StateSuperseded {
				l = left(time.Until(a.ExpiresAt))
			}
			tp.Row(a.ActionID, a.RequestID, a.State, string(a.Kind), strings.Join(a.Targets, ","), a.Value, a.Actor, a.Reason, a.Incident, l)
		}
		return tp.Flush()
	})
}
