package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/output"
	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/internal/yamlfile"
	"github.com/stormctl/stormctl/playbooks"
)

// newPlaybookCmd is `stormctl playbook ...`. Its --playbooks flag is
// persistent on the playbook command, so every verb accepts it.
func newPlaybookCmd(f *Factory) *cobra.Command {
	var dirs []string
	cmd := &cobra.Command{
		Use:   "playbook",
		Short: "Runbooks as YAML whose steps check, act and verify",
		Long: `A playbook encodes the response to one incident shape: confirm the signal with a
saved query, pull the right lever through every guard, wait for the recovery,
and warn against the instinctive mistake. Built-in playbooks cover the incident
shapes of a retry storm; add your own with --playbooks DIR or playbooks-dirs in
the config (a playbook with a built-in's name replaces it).`,
	}
	addPlaybooksFlag(cmd.PersistentFlags(), &dirs)
	cmd.AddCommand(newPlaybookListCmd(f, &dirs), newPlaybookShowCmd(f, &dirs), newPlaybookValidateCmd(f),
		newPlaybookRunCmd(f, &dirs), newPlaybookStatusCmd(f, &dirs))
	return cmd
}

// addPlaybooksFlag binds --playbooks; the dashboard can bind it too.
func addPlaybooksFlag(fs *pflag.FlagSet, dirs *[]string) {
	fs.StringArrayVar(dirs, "playbooks", nil, "extra directory of playbook YAML files (repeatable; config: playbooks-dirs)")
}

// playbookNames completes playbook names.
func playbookNames(f *Factory, dirs *[]string) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		set, err := f.Playbooks(*dirs)
		if err != nil || len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for _, pb := range set.List() {
			names = append(names, pb.Name+"\t"+pb.Title)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

type playbookInfo struct {
	Name      string `json:"name"`
	Title     string `json:"title"`
	Steps     int    `json:"steps"`
	Source    string `json:"source"`
	Version   string `json:"version"`
	Builtin   bool   `json:"builtin"`
	Overrides string `json:"overrides,omitempty"`
}

func newPlaybookListCmd(f *Factory, dirs *[]string) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the playbooks: built-in and your own",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			set, err := f.Playbooks(*dirs)
			if err != nil {
				return err
			}
			var rows []playbookInfo
			for _, pb := range set.List() {
				rows = append(rows, playbookInfo{Name: pb.Name, Title: pb.Title, Steps: len(pb.Steps), Source: pb.Source,
					Version: pb.Version, Builtin: pb.Builtin, Overrides: pb.Overrides})
			}
			return f.Print(rows, func(tty bool) error {
				t := output.NewTable(f.IO.Out, tty, "name", "steps", "source", "title")
				for _, r := range rows {
					t.Row(r.Name, fmt.Sprint(r.Steps), r.Source, r.Title)
				}
				return t.Flush()
			})
		},
	}
}

func newPlaybookShowCmd(f *Factory, dirs *[]string) *cobra.Command {
	var source bool
	cmd := &cobra.Command{
		Use:               "show NAME",
		Short:             "Show a playbook's parameters and steps, and what each does",
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: playbookNames(f, dirs),
		RunE: func(_ *cobra.Command, args []string) error {
			pb, err := f.Playbook(*dirs, args[0])
			if err != nil {
				return err
			}
			if source {
				raw, err := pb.Raw()
				if err != nil {
					return err
				}
				_, err = f.IO.Out.Write(raw)
				return err
			}
			return f.Print(pb, func(bool) error { return printPlaybook(f, pb) })
		},
	}
	cmd.Flags().BoolVar(&source, "source", false, "print the playbook's YAML as written")
	return cmd
}

func newPlaybookValidateCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check playbook files against the schema and the query catalogue; exit 2 on any error",
		Args:  usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(_ *cobra.Command, files []string) error {
			cat, err := f.Catalog()
			if err != nil {
				return err
			}
			var all yamlfile.Errors
			reports := make([]validateReport, 0, len(files))
			for _, file := range files {
				pb, err := playbooks.ParseFile(file, cat)
				var errs yamlfile.Errors
				switch {
				case errors.As(err, &errs):
					all = append(all, errs...)
					reports = append(reports, validateReport{File: file, Problems: errs})
				case err != nil:
					return err
				default:
					reports = append(reports, validateReport{File: file, OK: true, Playbook: pb.Name, Steps: len(pb.Steps), Version: pb.Version})
				}
			}
			var failed error
			if len(all) > 0 {
				failed = exit.NewUsage(fmt.Errorf("%d problem(s) in %d file(s)", len(all), len(files)))
			}
			return printValidate(f, reports, all, failed)
		},
	}
}

// printPlaybook describes a playbook for a responder: the forward steps in
// order, then the steps that undo them.
func printPlaybook(f *Factory, pb *playbooks.Playbook) error {
	w := f.IO.Out
	fmt.Fprintf(w, "%s: %s\n", pb.Name, sanitize.Line(pb.Title))
	if pb.Summary != "" {
		fmt.Fprintf(w, "\n%s\n", wrap(pb.Summary, 88, ""))
	}
	fmt.Fprintf(w, "\nsource %s, version %s\n", pb.Source, pb.Version)
	if len(pb.Parameters) > 0 {
		fmt.Fprintf(w, "\nParameters (--param NAME=VALUE):\n")
		for _, p := range pb.Parameters {
			req := "optional"
			switch {
			case p.Required:
				req = "required"
			case p.Default != "":
				req = "default " + p.Default
			}
			fmt.Fprintf(w, "  %-14s %s; %s\n", p.Name, req, p.Description)
		}
	}
	fmt.Fprintf(w, "\nSteps:\n")
	n := 0
	var undo []*playbooks.Step
	for _, s := range pb.Steps {
		if s.RollbackOf() != "" {
			undo = append(undo, s)
			continue
		}
		n++
		fmt.Fprintf(w, "%3d. %-7s %s  %s\n", n, s.Type, s.ID, sanitize.Line(s.Title))
		for _, line := range stepDetails(s, playbooks.Placeholders) {
			fmt.Fprintf(w, "              %s\n", line)
		}
	}
	if len(undo) > 0 {
		fmt.Fprintf(w, "\nRollback steps (run one with `stormctl playbook run %s --step ID`):\n", pb.Name)
		for _, s := range undo {
			fmt.Fprintf(w, "     %-7s %s  %s (undoes %s)\n", s.Type, s.ID, sanitize.Line(s.Title), s.RollbackOf())
			for _, line := range stepDetails(s, playbooks.Placeholders) {
				fmt.Fprintf(w, "              %s\n", line)
			}
		}
	}
	return nil
}

// stepDetails says what a step does, one fact per line, with templated
// fields filled by fill.
func stepDetails(s *playbooks.Step, fill func(string) string) []string {
	var out []string
	if s.When != nil {
		out = append(out, s.When.String())
	}
	switch s.Type {
	case playbooks.Check, playbooks.Wait:
		q := fmt.Sprintf("%s%s %s", s.Query, paramText(s.Params, fill), s.Expect)
		if s.For > 0 {
			q += " for " + s.For.D().String()
		}
		if s.Within > 0 {
			q += " at some moment within " + s.Within.D().String()
		}
		if s.Match == "any" {
			q += " (any series)"
		}
		if s.NoData == "pass" {
			q += " (no data passes)"
		}
		if s.Type == playbooks.Wait {
			q = fmt.Sprintf("poll every ~%s, up to %s, until %s", s.Every.D(), s.Timeout.D(), q)
		}
		out = append(out, q)
		if s.OnFail == "continue" {
			out = append(out, "if unmet, the run continues")
		}
	case playbooks.Action:
		if s.Op == playbooks.OpRelease {
			out = append(out, fmt.Sprintf("release the %s lever on %s", s.Kind, fill(s.Target)))
		} else {
			a := fmt.Sprintf("%s=%s on %s for %s", s.Kind, fill(s.Value), fill(s.Target), s.TTL.D())
			if s.Supersede {
				a += ", superseding the lever held"
			}
			if s.Force {
				a += ", forced (journaled as forced)"
			}
			out = append(out, a)
		}
		if len(s.Requires) > 0 {
			out = append(out, "requires "+strings.Join(s.Requires, ", ")+" to pass first")
		}
		if s.Rollback != "" {
			out = append(out, "undo with step "+s.Rollback)
		}
	case playbooks.Note:
		out = append(out, strings.Split(wrap(fill(s.Text), 72, ""), "\n")...)
	case playbooks.Ask:
		q := fill(s.Question)
		if len(s.Choices) > 0 {
			q += " [" + strings.Join(s.Choices, "/") + "]"
		}
		out = append(out, strings.Split(wrap(q, 72, ""), "\n")...)
	}
	return out
}

func paramText(params map[string]string, fill func(string) string) string {
	if len(params) == 0 {
		return ""
	}
	keys := slices.Sorted(maps.Keys(params))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + fill(params[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// wrap breaks text into lines of at most width runes, each with prefix.
func wrap(text string, width int, prefix string) string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len([]rune(line))+1+len([]rune(word)) > width {
			lines = append(lines, prefix+line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		lines = append(lines, prefix+line)
	}
	return strings.Join(lines, "\n")
}
