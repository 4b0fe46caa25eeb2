package queries

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Doctor limits: a handful of requests, so asking a struggling Prometheus
// what it holds does not add to its load.
const (
	DefaultDoctorRequests = 16
	DefaultDoctorLookback = 15 * time.Minute
)

// DoctorOptions say what to look for. Empty Service and Dependency look at
// every series.
type DoctorOptions struct {
	Service, Dependency string
	Time                time.Time     // zero: now
	Lookback            time.Duration // how far back the label APIs look; default DefaultDoctorLookback
	MaxRequests         int           // probing requests at most; default DefaultDoctorRequests
	Context             string        // config context name for the snippet; "" writes <context>
}

// Diagnosis is what the doctor found and what to configure. Its JSON shape
// is stable (stormctl query doctor -o json).
type Diagnosis struct {
	Time       time.Time     `json:"time"`
	Service    string        `json:"service,omitempty"`
	Dependency string        `json:"dependency,omitempty"`
	Requests   int           `json:"requests"` // probing requests sent (answers not counted)
	Packs      []PackFinding `json:"packs"`
	Answers    []Answer      `json:"answers"`
	Config     string        `json:"config"` // YAML for the config file; "" when nothing fits
	Notes      []string      `json:"notes,omitempty"`
}

// PackFinding is one pack whose metrics the server holds.
type PackFinding struct {
	Pack            string            `json:"pack"`
	Metrics         []string          `json:"metrics"`          // present, as stored
	Labels          map[string]string `json:"labels,omitempty"` // overrides this setup needs
	ServiceLabel    string            `json:"service_label,omitempty"`
	ServiceValue    string            `json:"service_value,omitempty"`
	DependencyLabel string            `json:"dependency_label,omitempty"`
	DependencyValue string            `json:"dependency_value,omitempty"`
	DependencyForm  string            `json:"dependency_form,omitempty"` // exact, fqdn, grpc-target, envoy-cluster
	Problem         string            `json:"problem,omitempty"`         // why the pack cannot answer here
}

// Fits reports whether the pack answers in this setup.
func (f PackFinding) Fits() bool { return f.Problem == "" }

// Answer is one catalogue query evaluated with the suggested configuration.
type Answer struct {
	Query  string        `json:"query"`
	Pack   string        `json:"pack"`
	Bound  string        `json:"bound,omitempty"`
	Values []AnswerValue `json:"values,omitempty"`
	NoData string        `json:"no_data,omitempty"`
	Error  string        `json:"error,omitempty"`
}

// AnswerValue is one series of an Answer.
type AnswerValue struct {
	Labels map[string]string `json:"labels"`
	Value  float64           `json:"value"`
	Status Status            `json:"status"`
}

// Doctor probes a Prometheus for the packs' metrics and labels.
type Doctor struct {
	Catalog *Catalog
	Client  *Client
	Runner  *Runner // evaluates the answers
}

// Run probes with at most opts.MaxRequests requests (one presence query,
// then label names and label values per pack found), then evaluates every
// query of each pack that fits with the labels it found.
func (d *Doctor) Run(ctx context.Context, opts DoctorOptions) (*Diagnosis, error) {
	if err := ValidateValue(ParamService, opts.Service); err != nil {
		return nil, err
	}
	if err := ValidateValue(ParamDependency, opts.Dependency); err != nil {
		return nil, err
	}
	at := opts.Time
	if at.IsZero() {
		at = time.Now()
	}
	if opts.Lookback <= 0 {
		opts.Lookback = DefaultDoctorLookback
	}
	if opts.MaxRequests <= 0 {
		opts.MaxRequests = DefaultDoctorRequests
	}
	p := &probe{api: d.Client.API, errf: d.Client.Err, at: at, since: at.Add(-opts.Lookback), budget: opts.MaxRequests}
	dg := &Diagnosis{Time: at, Service: opts.Service, Dependency: opts.Dependency, Packs: []PackFinding{}, Answers: []Answer{}}
	byPack := d.packMetrics()
	var all []string
	for _, pk := range d.Catalog.Packs() {
		for _, m := range byPack[pk.Name] {
			if !slices.Contains(all, m) {
				all = append(all, m)
			}
		}
	}
	present, err := p.present(ctx, all)
	if err != nil {
		return nil, fmt.Errorf("query doctor: could not ask which packs' metrics exist, so nothing was probed: %w", err)
	}
	names := map[string][]string{} // label names per probed metric, shared by packs
	for _, pk := range d.Catalog.Packs() {
		f := PackFinding{Pack: pk.Name}
		for _, m := range byPack[pk.Name] {
			if s, ok := present[m]; ok {
				f.Metrics = append(f.Metrics, s)
			}
		}
		if len(f.Metrics) == 0 {
			continue
		}
		if err := d.examine(ctx, p, pk, &f, opts, names); err != nil {
			if !errors.Is(err, errBudget) {
				return nil, fmt.Errorf("query doctor: could not read the labels of pack %s's metrics: %w", pk.Name, err)
			}
			f.Problem = fmt.Sprintf("not examined: the doctor's budget of %d requests is spent (--max-requests)", p.budget)
		}
		dg.Packs = append(dg.Packs, f)
	}
	dg.Requests = p.used
	if len(dg.Packs) == 0 {
		dg.Notes = append(dg.Notes, fmt.Sprintf("no metric of any pack has series at %s: check the Prometheus URL and that the exporters are scraped", at.UTC().Format(time.RFC3339)))
	}
	for _, f := range dg.Packs {
		if f.Fits() {
			dg.Answers = append(dg.Answers, d.answers(ctx, f, opts, at)...)
		}
	}
	dg.Config = snippet(dg, opts.Context)
	return dg, nil
}

// examine finds, on the pack's first present metric, the labels that carry
// the service, the dependency and the pool.
func (d *Doctor) examine(ctx context.Context, p *probe, pk *Pack, f *PackFinding, opts DoctorOptions, cache map[string][]string) error {
	metric := f.Metrics[0]
	names, ok := cache[metric]
	if !ok {
		var err error
		if names, err = p.labelNames(ctx, metric); err != nil {
			return err
		}
		cache[metric] = names
	}
	// A pack's first metric is a traffic metric when it maps a dependency
	// and a pool metric otherwise; only that param's label must be on it.
	param := ParamDependency
	if pk.Labels[param] == "" {
		param = ParamPool
	}
	if l := pk.Labels[param]; l != "" && !slices.Contains(names, l) {
		f.Problem = fmt.Sprintf("%s has no %s label (the %s); its labels: %s", metric, l, param, strings.Join(names, ", "))
		return nil
	}
	label, value, err := p.findService(ctx, pk, metric, opts.Service, names)
	if err != nil {
		return err
	}
	switch {
	case label == "" && opts.Service != "":
		f.Problem = fmt.Sprintf("no label of %s has the value %q", metric, opts.Service)
		return nil
	case label == "":
		f.Problem = fmt.Sprintf("no label of %s names one service per series (job values are shared scrape jobs)", metric)
		return nil
	}
	f.ServiceLabel, f.ServiceValue = label, value
	if def := pk.Labels[ParamService]; label != def && !(def == "" && label == ParamService) {
		f.Labels = map[string]string{ParamService: label}
	}
	f.DependencyLabel = pk.Labels[ParamDependency]
	if f.DependencyLabel == "" || opts.Dependency == "" {
		return nil
	}
	f.DependencyValue, f.DependencyForm, err = p.findDependency(ctx, pk, metric, opts.Dependency)
	if err != nil {
		return err
	}
	switch {
	case f.DependencyValue == "":
		f.Problem = fmt.Sprintf("no %s value of %s names %q", f.DependencyLabel, metric, opts.Dependency)
	case f.DependencyForm != MatchExact && f.DependencyForm != pk.Match[ParamDependency]:
		f.Problem = fmt.Sprintf("%s takes the %s form (%q) and the pack matches names exactly: pass --dependency %q", f.DependencyLabel, f.DependencyForm, f.DependencyValue, f.DependencyValue)
	}
	return nil
}

// packMetrics lists, per pack, the metrics its answerable queries read.
func (d *Doctor) packMetrics() map[string][]string {
	out := map[string][]string{}
	for _, q := range d.Catalog.Queries() {
		for _, name := range q.Answers() {
			pk, _ := d.Catalog.Pack(name)
			for _, m := range q.packQuery(pk).Metrics {
				if !slices.Contains(out[name], m) {
					out[name] = append(out[name], m)
				}
			}
		}
	}
	return out
}

// answers evaluates every query the pack answers, as the dashboard would
// with the suggested configuration.
func (d *Doctor) answers(ctx context.Context, f PackFinding, opts DoctorOptions, at time.Time) []Answer {
	var out []Answer
	for _, q := range d.Catalog.Queries() {
		if !slices.Contains(q.Answers(), f.Pack) {
			continue
		}
		a := Answer{Query: q.ID, Pack: f.Pack}
		r, err := d.Catalog.Render(q.ID, f.Pack, Params{Service: opts.Service, Dependency: opts.Dependency, Labels: f.Labels})
		if err != nil {
			a.Error = err.Error()
			out = append(out, a)
			continue
		}
		a.Bound = r.Bound
		res := d.Runner.Run(ctx, Request{Key: "doctor|" + q.ID + "|" + f.Pack, Expr: r.Expr, Time: at, Metrics: r.Metrics})
		switch {
		case res.Err != nil:
			a.Error = res.Err.Error()
		case res.NoData != nil:
			a.NoData = res.NoData.Message
		}
		for _, s := range res.Series {
			a.Values = append(a.Values, AnswerValue{Labels: s.Labels, Value: s.Value, Status: r.Threshold.Evaluate(s.Value)})
		}
		out = append(out, a)
	}
	return out
}
