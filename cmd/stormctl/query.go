package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/stormctl/stormctl/alerts"
	"sort"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/prometheus/common/model"
	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/output"
	"github.com/stormctl/stormctl/queries"
)

func newQueryCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "query",
		Short: "Saved amplification queries: list, show, run, check, export, doctor",
		Long: `Saved queries answer "are retries now the load?" from Prometheus. Each has
thresholds and one PromQL template per pack (the stormctl metric contract, Envoy,
Envoy in Istio sidecars, Istio, resilience4j, OpenTelemetry HTTP (stable and
pre-stable names), gRPC, span metrics (Collector connector, Tempo), HikariCP, Go
database/sql and sqlstats). "query doctor" finds which packs and label names fit
your Prometheus and prints the config for them.`,
	}
	cmd.AddCommand(newQueryListCmd(f), newQueryShowCmd(f), newQueryRunCmd(f), newQueryCheckCmd(f), newQueryExportCmd(f), newQueryDoctorCmd(f))
	return cmd
}

// queryParams are the flags that select and parameterise a saved query.
type queryParams struct {
	pack, service, dependency, pool, window string
	recorded                                bool // --recorded, with --top
}

func (p *queryParams) bind(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&p.pack, "pack", "", "query pack (default: the service's pack from config, else stormctl)")
	fl.StringVar(&p.service, "service", "", "service (caller) to select; empty = every service")
	fl.StringVar(&p.dependency, "dependency", "", "dependency (callee) to select; empty = every dependency")
	fl.StringVar(&p.pool, "pool", "", "connection or thread pool to select")
	fl.StringVar(&p.window, "window", "", "rate window, e.g. 1m (default: the query's)")
}

// render resolves the pack and renders query id; parameter errors exit 2.
func (p *queryParams) render(f *Factory, id string) (*queries.Rendered, error) {
	cat, pack, qp, err := p.resolve(f)
	if err != nil {
		return nil, err
	}
	return cat.Render(id, pack, qp)
}

// resolve picks the pack and turns the flags into query params.
func (p *queryParams) resolve(f *Factory) (*queries.Catalog, string, queries.Params, error) {
	cat, err := f.Catalog()
	if err != nil {
		return nil, "", queries.Params{}, err
	}
	pack, labels, err := f.packFor(p.pack, p.service)
	if err != nil {
		return nil, "", queries.Params{}, err
	}
	qp := queries.Params{Service: p.service, Dependency: p.dependency, Pool: p.pool, Labels: labels}
	if p.window != "" {
		d, err := model.ParseDuration(p.window)
		if err != nil || d <= 0 {
			return nil, "", queries.Params{}, exit.NewUsage(fmt.Errorf("--window %q: want a Prometheus duration such as 30s, 1m or 5m", p.window))
		}
		qp.Window = time.Duration(d)
	}
	return cat, pack, qp, nil
}

type thresholdJSON struct {
	Warn      *float64 `json:"warn,omitempty"`
	Crit      *float64 `json:"crit,omitempty"`
	Direction string   `json:"direction"`
	For       string   `json:"for,omitempty"`
}

func thresholdOf(t queries.Threshold) thresholdJSON {
	j := thresholdJSON{Warn: t.Warn, Crit: t.Crit, Direction: string(t.Direction)}
	if t.For > 0 {
		j.For = model.Duration(t.For).String()
	}
	return j
}

type packInfo struct {
	Name  string `json:"name"`
	Bound string `json:"bound,omitempty"`
	Note  string `json:"note,omitempty"`
}

type unsupportedInfo struct {
	Pack   string `json:"pack"`
	Reason string `json:"reason"`
}

type queryInfo struct {
	ID          string            `json:"id"`
	Title       string            `json:"title"`
	Unit        string            `json:"unit"`
	Meaning     string            `json:"meaning"`
	Action      string            `json:"action"`
	Params      []string          `json:"params"`
	Threshold   thresholdJSON     `json:"threshold"`
	Packs       []packInfo        `json:"packs"`
	Unsupported []unsupportedInfo `json:"unsupported,omitempty"`
}

func describe(cat *queries.Catalog, q *queries.Query) queryInfo {
	qi := queryInfo{ID: q.ID, Title: q.Title, Unit: q.Unit, Meaning: q.Meaning, Action: q.Action,
		Params: q.Params, Threshold: thresholdOf(q.Threshold), Packs: []packInfo{}}
	pqs := cat.PackQueries(q)
	names := make([]string, 0, len(pqs))
	for n := range pqs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		pq := pqs[n]
		if pq.Unsupported != "" {
			qi.Unsupported = append(qi.Unsupported, unsupportedInfo{Pack: n, Reason: pq.Unsupported})
			continue
		}
		qi.Packs = append(qi.Packs, packInfo{Name: n, Bound: pq.Bound, Note: pq.Note})
	}
	return qi
}

func newQueryListCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the saved queries with their units, thresholds and packs",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			cat, err := f.Catalog()
			if err != nil {
				return err
			}
			infos := []queryInfo{}
			for _, q := range cat.Queries() {
				infos = append(infos, describe(cat, q))
			}
			return f.Print(infos, func(tty bool) error {
				t := output.NewTable(f.IO.Out, tty, "id", "title", "unit", "warn", "crit", "for", "packs")
				for _, qi := range infos {
					names := make([]string, len(qi.Packs))
					for i, p := range qi.Packs {
						names[i] = p.Name
						if p.Bound != "" {
							names[i] += "(" + p.Bound + " bound)"
						}
					}
					t.Row(qi.ID, qi.Title, qi.Unit, thresholdCell(qi.Threshold, qi.Threshold.Warn),
						thresholdCell(qi.Threshold, qi.Threshold.Crit), qi.Threshold.For, strings.Join(names, ","))
				}
				return t.Flush()
			})
		},
	}
}

func thresholdCell(t thresholdJSON, v *float64) string {
	if v == nil {
		return "-"
	}
	op := ">"
	if t.Direction == string(queries.Below) {
		op = "<"
	}
	return op + formatValue(*v)
}

func newQueryShowCmd(f *Factory) *cobra.Command {
	var p queryParams
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Print the PromQL a saved query renders to",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(_ *cobra.Command, args []string) error {
			r, err := p.render(f, args[0])
			if err != nil {
				return err
			}
			return f.Print(renderedJSON(r), func(bool) error {
				fmt.Fprintf(f.IO.ErrOut, "# %s, pack %s%s\n", r.QueryID, r.Pack, boundNote(r))
				_, err := fmt.Fprintln(f.IO.Out, r.Expr)
				return err
			})
		},
	}
	p.bind(cmd)
	return cmd
}

type renderedInfo struct {
	ID      string   `json:"id"`
	Pack    string   `json:"pack"`
	Unit    string   `json:"unit"`
	Expr    string   `json:"expr"`
	Metrics []string `json:"metrics"`
	Bound   string   `json:"bound,omitempty"`
	Note    string   `json:"note,omitempty"`
}

func renderedJSON(r *queries.Rendered) renderedInfo {
	return renderedInfo{ID: r.QueryID, Pack: r.Pack, Unit: r.Unit, Expr: r.Expr, Metrics: r.Metrics, Bound: r.Bound, Note: r.Note}
}

func boundNote(r *queries.Rendered) string {
	s := ""
	if r.Bound != "" {
		s += "; a " + r.Bound + " bound"
	}
	if r.Note != "" {
		s += "; " + r.Note
	}
	return s
}

func newQueryExportCmd(f *Factory) *cobra.Command {
	var format, pack string
	var top int
	var alertRules bool
	cmd := &cobra.Command{
		Use:   "export --format rules [--pack P] [--top N | --alerts]",
		Short: "Export the catalogue as Prometheus recording and alerting rules",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			if format != "rules" {
				return exit.NewUsage(fmt.Errorf("--format %q: only \"rules\" is supported", format))
			}
			cat, err := f.Catalog()
			if err != nil {
				return err
			}
			if _, err := cat.Pack(pack); err != nil {
				return exit.NewUsage(err)
			}
			if top < 0 || top > queries.MaxTop {
				return exit.NewUsage(fmt.Errorf("--top %d: want 0 (no fleet rules) to %d", top, queries.MaxTop))
			}
			cfg, err := f.Config()
			if err != nil {
				return err
			}
			// The context's label names for the pack (packs.<pack>.labels).
			params := queries.Params{Labels: cfg.LabelsFor(pack, "")}
			out, err := cat.RulesWithFleet(pack, params, top)
			if alertRules {
				out, err = cat.AlertRules(pack, params, alerts.PlaybookFor(cfg.Alerts.Playbooks))
			}
			if err != nil {
				return err
			}
			// The rules file is YAML; -o json gives the same document as JSON.
			if ft, _ := f.Output(); ft == output.JSON {
				if out, err = yaml.YAMLToJSON(out); err != nil {
					return err
				}
				var buf bytes.Buffer
				if err := json.Indent(&buf, out, "", "  "); err != nil {
					return err
				}
				out = append(buf.Bytes(), '\n')
			}
			f.printed = true
			_, err = f.IO.Out.Write(out)
			return err
		},
	}
	cmd.Flags().StringVar(&format, "format", "rules", "export format: rules")
	cmd.Flags().StringVar(&pack, "pack", "stormctl", "query pack to export")
	cmd.Flags().BoolVar(&alertRules, "alerts", false,
		"print only the alerting rules for Alertmanager and stormctl alerts serve: one per saved query, "+
			"labelled stormctl_query, service, dependency, severity, annotated with the playbook and the dashboard command")
	cmd.Flags().IntVar(&top, "top", queries.DefaultRulesTop,
		"also record each query's fleet reduction, its worst `N` series and level counts, for --recorded --top N; 0: none")
	return cmd
}
