// Package output prints command results as an aligned table on a terminal,
// tab-separated rows in a pipe, or stable JSON or YAML for scripts.
package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/stormctl/stormctl/internal/sanitize"
)

// Format is an output format selected with -o.
type Format string

// The formats -o accepts.
const (
	Table Format = "table"
	JSON  Format = "json"
	YAML  Format = "yaml"
)

// ParseFormat validates an -o value; "" means table.
func ParseFormat(s string) (Format, error) {
	switch Format(s) {
	case "", Table:
		return Table, nil
	case JSON, YAML:
		return Format(s), nil
	}
	return "", fmt.Errorf("unknown output format %q (want table, json or yaml)", s)
}

// Structured writes v as JSON (indented, trailing newline) or YAML. The YAML
// is converted from the JSON, so both formats have one shape: the json tags.
func Structured(w io.Writer, f Format, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Targets such as checkout->payments must read as written, not \u003e.
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	data := buf.Bytes()
	if f == YAML {
		var err error
		if data, err = jsonToYAML(data); err != nil {
			return err
		}
	}
	_, err := w.Write(data)
	return err
}

// TablePrinter collects rows and prints them aligned under a header on a
// terminal, or as tab-separated rows without a header otherwise, so that
// `cut` and `awk` see stable columns.
type TablePrinter struct {
	w      io.Writer
	tty    bool
	header []string
	rows   [][]string
}

// NewTable returns a printer for the given header.
func NewTable(w io.Writer, tty bool, header ...string) *TablePrinter {
	return &TablePrinter{w: w, tty: tty, header: header}
}

// Row adds one row; missing cells print empty. Each cell is made one safe
// line (sanitize.Line): text from Redis or Prometheus can neither act on
// the terminal nor forge a row or a column with a newline or a tab.
func (t *TablePrinter) Row(cells ...string) {
	safe := make([]string, len(cells))
	for i, c := range cells {
		safe[i] = sanitize.Line(c)
	}
	t.rows = append(t.rows, safe)
}

// Len returns the number of rows added.
func (t *TablePrinter) Len() int { return len(t.rows) }

// Flush writes the table.
func (t *TablePrinter) Flush() error {
	if !t.tty {
		for _, r := range t.rows {
			if _, err := fmt.Fprintln(t.w, strings.Join(r, "\t")); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(t.w, 0, 4, 2, ' ', 0)
	upper := make([]string, len(t.header))
	for i, h := range t.header {
		upper[i] = strings.ToUpper(h)
	}
	fmt.Fprintln(tw, strings.Join(upper, "\t"))
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}
