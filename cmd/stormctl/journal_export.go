package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/atomicfile"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/journal"
)

type journalExportOptions struct {
	src             journalSourceOptions
	format, out     string
	incident, actor string
	since, until    string
	noCharts        bool
	allowedSigners  string
	requireSigs     bool
}

func newJournalExportCmd(f *Factory) *cobra.Command {
	o := &journalExportOptions{}
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Export the journal as a Markdown timeline, CSV, JSON Lines or an HTML report",
		Long: `Export the journal, streaming (memory stays flat however long it is):

  md     post-incident timeline: time, actor, what, why, evidence, and how each
         action ended (released, expired, superseded), grouped by playbook
  csv    one row per entry with a header row
  jsonl  the entries exactly as stored; an unfiltered export passes
         "journal verify --file"
  html   one self-contained post-incident report (no scripts, fonts or
         requests; prints on A4; dark and light): key times, the signals
         from Prometheus over the incident with a marker per entry, each
         lever's lifetime, the timeline with each entry's signer, and the
         proof (journal verify's result, against --allowed-signers or the
         context's journal.allowed-signers when given). Without
         Prometheus (or with --no-charts) it says so in place of each chart.

Every export ends with the checkpoint of the journal it read (head hash and
count of every entry read, filtered out or not, and the time), signed with
the journal signing key when there is one: keep the file, and
"journal verify --checkpoint FILE" detects any later cut or rewrite up to it.

--since and --until take RFC 3339 times, dates (UTC) or durations ago (90m).`,
		Example: `  stormctl journal export --format html --incident INC-7 --out INC-7.html
  stormctl journal export --format html --incident INC-7 --out INC-7.html --allowed-signers allowed_signers
  stormctl journal export --format md --incident INC-7 --out INC-7.md
  stormctl journal export --format csv --since 2h --actor alice
  stormctl journal export --format md --file saved-journal.jsonl`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return runJournalExport(cmd.Context(), f, o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.format, "format", "md", "md, csv, jsonl or html")
	fl.BoolVar(&o.noCharts, "no-charts", false, "html: do not query Prometheus for the charts")
	fl.StringVar(&o.allowedSigners, "allowed-signers", "", "html: allowed_signers file the proof checks each entry's signer against (config: journal.allowed-signers)")
	fl.BoolVar(&o.requireSigs, "require-signatures", false, "html: an unsigned entry fails the proof (needs allowed signers)")
	fl.StringVar(&o.out, "out", "", "write to this file instead of stdout")
	fl.StringVar(&o.incident, "incident", "", "only entries of this incident")
	fl.StringVar(&o.actor, "actor", "", "only entries by this actor (declared or Redis user)")
	fl.StringVar(&o.since, "since", "", "only entries at or after this time")
	fl.StringVar(&o.until, "until", "", "only entries before this time")
	o.src.bind(cmd, "export")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{"md", "csv", "jsonl", "html"}, cobra.ShellCompDirectiveNoFileComp))
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
	if (o.allowedSigners != "" || o.requireSigs) && format != journal.HTML {
		return exit.NewUsage(fmt.Errorf("--allowed-signers and --require-signatures apply to --format html only (to check a %s export, run journal verify --file)", format))
	}
	recs, head, done, err := o.src.records(ctx, f)
	if err != nil {
		return err
	}
	defer done()
	var n int
	stdout := f.IO.Out
	if format == journal.JSONL && !f.IO.IsStdoutTTY() {
		// Piped, the export is the record itself and must verify byte for
		// byte, as --out writes it; JSON escapes C0 controls already.
		stdout = f.IO.RawOut()
	}
	err = writeOut(o.out, stdout, func(w io.Writer) error {
		if format == journal.HTML {
			var warnings []string
			n, warnings, err = writeHTMLReport(ctx, f, o, w, recs, head, flt)
			for _, w := range warnings {
				fmt.Fprintln(f.IO.ErrOut, "warning: "+w)
			}
			return err
		}
		signer, err := f.Signer()
		if err != nil {
			return err
		}
		cfg, err := f.Config()
		if err != nil {
			return err
		}
		n, err = journal.ExportWith(w, format, recs, journal.ExportOptions{Filter: flt, Signer: signer, Actor: cfg.Actor})
		if err != nil {
			return fmt.Errorf("journal export after %d entries: %w", n, err)
		}
		return nil
	})
	if err == nil && o.out != "" {
		fmt.Fprintf(f.IO.ErrOut, "exported %d entries to %s\n", n, o.out)
	}
	return err
}

// writeOut runs write on stdout, or beside path and renamed onto it, so a
// failed export never leaves half a file under the final name.
func writeOut(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "" {
		return write(stdout)
	}
	return atomicfile.Write(path, 0o600, write)
}
