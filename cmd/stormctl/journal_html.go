package main

import (
	"context"
	"io"
	"iter"

	"github.com/stormctl/stormctl/journal"
	reports "github.com/stormctl/stormctl/report"
)

// writeHTMLReport writes the report of `journal export --format html`.
func writeHTMLReport(ctx context.Context, f *Factory, o *journalExportOptions, w io.Writer,
	recs iter.Seq2[journal.Record, error], head string, flt journal.Filter) (int, []string, error) {
	ro, err := f.reportOptions(o.allowedSigners, o.requireSigs)
	if err != nil {
		return 0, nil, err
	}
	ro.Report.Filter, ro.Report.Head = flt, head
	ro.NoCharts, ro.File, ro.Out = o.noCharts, o.src.file, o.out
	return reports.Write(ctx, w, recs, ro, f.reportSources())
}
