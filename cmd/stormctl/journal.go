package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/output"
	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/journal"
)

func newJournalCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "journal",
		Short: "The hash-chained record of every action: tail, export, verify, sync",
		Long: `Every lever write, refusal, expiry, note and incident event is a journal entry,
chained by SHA-256 so that editing, removing, reordering or inserting an entry is
detected by "journal verify". Each entry is signed by its writer's SSH key
(--signing-key, journal.signing-key in the context, or ssh-agent), and signed
checkpoints kept outside Redis catch a cut tail. Entries made while Redis was
unreachable wait in a local file until "journal sync".`,
	}
	cmd.AddCommand(newJournalTailCmd(f), newJournalExportCmd(f), newJournalVerifyCmd(f), newJournalCheckpointCmd(f), newJournalSyncCmd(f))
	return cmd
}

// openJournal opens the control plane and journals any expiry not yet on
// the record, so that what is read is up to date.
func openJournal(ctx context.Context, f *Factory) (*controlplane.Store, *journal.Stream, error) {
	s, err := f.Store(ctx)
	if err != nil {
		return nil, nil, err
	}
	// A viewer may not reap; the next responder's command will.
	_, _ = s.Reap(ctx, time.Now())
	return s, s.Journal(), nil
}

type journalTailOptions struct {
	n      int64
	follow bool
}

func newJournalTailCmd(f *Factory) *cobra.Command {
	o := &journalTailOptions{}
	cmd := &cobra.Command{
		Use:   "tail",
		Short: "Print the last journal entries, and follow new ones with -f",
		Long: `Print the last N journal entries, oldest first; with -f keep printing entries
as they are appended until interrupted. With -o json the output is JSON Lines
(https://jsonlines.org): each entry one JSON object on its own line, exactly as
stored (the format of "journal export --format jsonl"), so that -f can stream it;
a failure adds one {"error": ...} line.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return runJournalTail(cmd.Context(), f, o) },
	}
	cmd.Flags().Int64VarP(&o.n, "lines", "n", 20, "how many entries to print")
	cmd.Flags().BoolVarP(&o.follow, "follow", "f", false, "keep printing new entries")
	return cmd
}

func runJournalTail(ctx context.Context, f *Factory, o *journalTailOptions) error {
	format, err := f.Output()
	if err != nil {
		return err
	}
	if format == output.YAML {
		return exit.NewUsage(fmt.Errorf("journal tail prints table or json (JSON Lines), not yaml"))
	}
	if o.n < 0 {
		return exit.NewUsage(fmt.Errorf("--lines must be at least 0"))
	}
	_, stream, err := openJournal(ctx, f)
	if err != nil {
		return err
	}
	recs, err := stream.Tail(ctx, o.n)
	if err != nil {
		return fmt.Errorf("journal tail: %w", err)
	}
	print := tailPrinter(f.IO.Out, format == output.JSON, f.IO.IsStdoutTTY())
	last := "0"
	if o.n == 0 {
		last = "$"
	}
	for _, r := range recs {
		if err := print(r); err != nil {
			return err
		}
		last = r.Pos
	}
	if !o.follow {
		return nil
	}
	for r, err := range stream.Follow(ctx, last) {
		if err != nil {
			return fmt.Errorf("journal tail: %w", err)
		}
		if err := print(r); err != nil {
			return err
		}
	}
	return nil
}

// tailPrinter prints one record per line: as stored for JSON, else as
// time, event, actor, what, reason and outcome, tab-separated off a TTY.
func tailPrinter(w io.Writer, asJSON, tty bool) func(journal.Record) error {
	sep := "\t"
	if tty {
		sep = "  "
	}
	return func(r journal.Record) error {
		if asJSON {
			_, err := fmt.Fprintf(w, "%s\n", r.Data)
			return err
		}
		var e journal.Entry
		if err := json.Unmarshal(r.Data, &e); err != nil {
			return fmt.Errorf("journal entry %s: %w", r.Pos, err)
		}
		what := strings.TrimSpace(strings.Join([]string{e.Kind, e.Target, e.Value}, " "))
		outcome := strings.Trim(strings.Join([]string{e.Outcome, e.Error}, ": "), ": ")
		fields := []string{e.Time.UTC().Format(time.DateTime), string(e.Event), e.Who(), what, e.Reason, outcome}
		for i, s := range fields {
			fields[i] = sanitize.Line(s) // one safe line each, whatever Redis holds
		}
		_, err := fmt.Fprintln(w, strings.Join(fields, sep))
		return err
	}
}

type journalSourceOptions struct {
	file string
	head string
}

// records is the journal to read: a saved JSON Lines file (no Redis), or
// the control plane's stream with its head.
func (o *journalSourceOptions) records(ctx context.Context, f *Factory) (iter.Seq2[journal.Record, error], string, func(), error) {
	if o.file != "" {
		fh, err := os.Open(o.file)
		if err != nil {
			return nil, "", nil, exit.NewUsage(err)
		}
		return journal.ReadRecords(fh, o.file), o.head, func() { fh.Close() }, nil
	}
	s, stream, err := openJournal(ctx, f)
	if err != nil {
		return nil, "", nil, err
	}
	head := o.head
	if head == "" {
		if head, err = s.JournalHead(ctx); err != nil {
			return nil, "", nil, err
		}
	}
	return stream.Range(ctx, "-", "+"), head, func() {}, nil
}

func (o *journalSourceOptions) bind(cmd *cobra.Command, what string) {
	cmd.Flags().StringVar(&o.file, "file", "", what+" a saved JSON Lines journal instead of Redis (no connection is made)")
}
