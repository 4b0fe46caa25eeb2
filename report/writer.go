package report

import (
	"context"
	"io"
	"iter"
	"path/filepath"
	"strings"

	"github.com/stormctl/stormctl/internal/atomicfile"
	"github.com/stormctl/stormctl/journal"
)

// Records opens the journal a report reads, with the control plane's head
// ("" for none), and a function that closes it.
type Records func(ctx context.Context) (recs iter.Seq2[journal.Record, error], head string, done func(), err error)

// Writer writes an incident's report from a journal into Dir: the
// dashboard's report key and the demo's exit use one.
type Writer struct {
	Dir     string
	Records Records
	// Options is what every report proves and signs with (allowed
	// signers, the signing key, the actor); Writer sets the filter, the
	// head and the output path.
	Options func() (Options, error)
	Sources Sources
}

// Path is where the report of incident is written.
func (r Writer) Path(incident string) string {
	name := "stormctl-report.html"
	if incident != "" {
		name = "stormctl-report-" + incident + ".html"
	}
	path := filepath.Join(r.Dir, name)
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return path
}

// WriteReport writes the report of incident ("" for the whole journal)
// beside its path and renames it there, so a failed report never leaves
// half a file; it implements tui.Reporter.
func (r Writer) WriteReport(ctx context.Context, incident string) (string, []string, error) {
	recs, head, done, err := r.Records(ctx)
	if err != nil {
		return "", nil, err
	}
	defer done()
	o, err := r.Options()
	if err != nil {
		return "", nil, err
	}
	o.Out = r.Path(incident)
	o.Report.Filter, o.Report.Head = journal.Filter{Incident: incident}, head
	var warnings []string
	err = atomicfile.Write(o.Out, 0o600, func(w io.Writer) error {
		_, warnings, err = Write(ctx, w, recs, o, r.Sources)
		return err
	})
	return o.Out, warnings, err
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
