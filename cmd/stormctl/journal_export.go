package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/journal"
)

type journalExportOptions struct {
	src             journalSourceOptions
	format, out     string
	incident, actor string
	since, until    string
}

func newJournalExportCmd(f *Factory) *cobra.Command {
	o := &journalExportOptions{}
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Export the journal as a Markdown timeline, CSV or JSON Lines",
		Long: `Export the journal, streaming (memory stays flat however long it is):

  md     post-incident timeline: time, actor, what, why, evidence, and how each
         action ended (released, expired, superseded), grouped by playbook
  csv    one row per entry with a header row
  jsonl  the entries exactly as stored; an unfiltered export passes
         "journal verify --file"

--since and --until take RFC 3339 times, dates (UTC) or durations ago (90m).`,
		Example: `  stormctl journal export --format md --incident INC-7 --out INC-7.md
  stormctl journal export --format csv --since 2h --actor alice
  stormctl journal export --format md --file saved-journal.jsonl`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return runJournalExport(cmd.Context(), f, o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.format, "format", "md", "md, csv or jsonl")
	fl.StringVar(&o.out, "out", "", "write to this file instead of stdout")
	fl.StringVar(&o.incident, "incident", "", "only entries of this incident")
	fl.StringVar(&o.actor, "actor", "", "only entries by this actor (declared or Redis user)")
	fl.StringVar(&o.since, "since", "", "only entries at or after this time")
	fl.StringVar(&o.until, "until", "", "only entries before this time")
	o.src.bind(cmd, "export")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{"md", "csv", "jsonl"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (o *journalExportOptions) filter(now time.Time) (journal.Filter, error) {
	flt := journal.Filter{Incident: o.incident, Actor: o.actor}
	var err error
	if o.since != "" {
		if flt.Since, err = journal.ParseTime(o.since, now); err != nil {
			return flt, exit.NewUsage(fmt.Errorf("--since: %w", err))
		}
	}
	if o.until != "" {
		if flt.Until, err = journal.ParseTime(o.until, now); err != nil {
			return flt, exit.NewUsage(fmt.Errorf("--until: %w", err))
		}
	}
	return flt, nil
}

func runJournalExport(ctx context.Context, f *Factory, o *journalExportOptions) error {
	if err := textOnly(f, "journal export", "its --format jsonl is JSON Lines, one entry per line"); err != nil {
		return err
	}
	format, err := journal.ParseFormat(o.format)
	if err != nil {
		return exit.NewUsage(err)
	}
	flt, err := o.filter(time.Now())
	if err != nil {
		return err
	}
	recs, _, done, err := o.src.records(ctx, f)
	if err != nil {
		return err
	}
	defer done()
	var w io.Writer = f.IO.Out
	var tmp *os.File
	if o.out != "" {
		// Write beside the target and rename, so a failed export never
		// leaves half a timeline under the final name.
		if tmp, err = os.CreateTemp(filepath.Dir(o.out), ".stormctl-export-*"); err != nil {
			return err
		}
		defer os.Remove(tmp.Name())
		w = tmp
	}
	n, err := journal.Export(w, format, recs, flt)
	if err != nil {
		return fmt.Errorf("journal export after %d entries: %w", n, err)
	}
	if tmp != nil {
		if err := tmp.Close(); err != nil {
			return err
		}
		if err := os.Rename(tmp.Name(), o.out); err != nil {
			return err
		}
		fmt.Fprintf(f.IO.ErrOut, "exported %d entries to %s\n", n, o.out)
	}
	return nil
}

func newJournalVerifyCmd(f *Factory) *cobra.Command {
	o := &journalSourceOptions{}
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check the hash chain: exit 4 naming the first edited, removed, moved or inserted entry",
		Long: `Recompute every entry's SHA-256 and check that each links to the one before it
and that the last is the control plane's journal head. An edited entry fails its
hash; a removed, reordered or inserted one breaks a link. On failure it exits 4
and names the first bad entry. With -o json it prints {"entries", "head",
"chain_intact"} and, on failure, "error" with the message and exit code.

With --file it checks a saved JSON Lines export (unfiltered); give --head to
also catch entries removed from its end.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			recs, head, done, err := o.records(cmd.Context(), f)
			if err != nil {
				return err
			}
			defer done()
			n, err := journal.Verify(recs, head)
			return printVerify(f, verifyReport{Entries: n, Head: head, ChainIntact: err == nil, Error: newErrorJSON(err)}, err)
		},
	}
	o.bind(cmd, "verify")
	cmd.Flags().StringVar(&o.head, "head", "", "the hash the journal must end at (default: the control plane's head; none for --file)")
	return cmd
}

func newJournalSyncCmd(f *Factory) *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Append the entries recorded locally while Redis was unreachable",
		Long: `Append to the shared journal the entries recorded in the local pending file while
Redis was unreachable, in order, keeping their ids and times. Each lands exactly
once: a sync that is interrupted can be run again.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if path == "" {
				path = f.PendingPath()
			}
			s, err := f.Store(cmd.Context())
			if err != nil {
				return err
			}
			res, err := journal.Sync(cmd.Context(), s, path)
			if err != nil {
				return err
			}
			return f.Print(res, func(bool) error {
				_, err := fmt.Fprintf(f.IO.Out, "synced %d entries from %s (%d already appended)\n", res.Appended, path, res.Skipped)
				return err
			})
		},
	}
	cmd.Flags().StringVar(&path, "file", "", "pending file (default $STORMCTL_JOURNAL_PENDING or $XDG_STATE_HOME/stormctl/journal-pending.jsonl)")
	return cmd
}

// verifyReport is what `journal verify -o json` prints.
type verifyReport struct {
	Entries     int        `json:"entries"`
	Head        string     `json:"head,omitempty"`
	ChainIntact bool       `json:"chain_intact"`
	Error       *errorJSON `json:"error,omitempty"`
}

// printVerify prints the report (a table prints only success, the error
// going to stderr) and returns err.
func printVerify(f *Factory, rep verifyReport, err error) error {
	perr := f.Print(rep, func(bool) error {
		if err != nil {
			return nil
		}
		fmt.Fprintf(f.IO.Out, "journal verified: %d entries, chain intact", rep.Entries)
		if rep.Head != "" {
			fmt.Fprintf(f.IO.Out, ", head %.12s", rep.Head)
		}
		_, err := fmt.Fprintln(f.IO.Out)
		return err
	})
	if err != nil {
		return err
	}
	return perr
}
