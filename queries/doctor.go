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
	// Unexamined are the packs whose metrics are present but which the
	// request budget did not reach (or finish): raise --max-requests.
	Unexamined []string `json:"unexamined,omitempty"`
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
	// Side is where the service was found: SideClient (its calls to its
	// dependencies), SideServer (only the requests it received) or SidePool.
	Side string `json:"side,omitempty"`
	// For a service found only server-side: the queries its own metrics
	// answer, and those that need its callers' (client-side) metrics.
	ServerQueries []string `json:"server_queries,omitempty"`
	CallerQueries []string `json:"caller_queries,omitempty"`
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
	// From is "callers" for a service seen only server-side: the query
	// evaluated with the service as the dependency, as its callers see it.
	From string `json:"from,omitempty"`
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
// query of each pack that fits with the labels it found. Every pack whose
// metrics are present is examined, client-side, server-side and pool, so a
// pack found early does not hide a better fit later.
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
	p := &probe{api: d.Client.API, errf: d.Client.Err, at: at, since: at.Add(-opts.Lookback), budget: opts.MaxRequests,
		names: map[string][]string{}, values: map[string][]string{}}
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
	layouts := map[string]packLayout{}
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
		lay := d.Catalog.layout(pk)
		layouts[pk.Name] = lay
		if err := d.examine(ctx, p, pk, lay, present, &f, opts); err != nil {
			if !errors.Is(err, errBudget) {
				return nil, fmt.Errorf("query doctor: could not read the labels of pack %s's metrics: %w", pk.Name, err)
			}
			f = PackFinding{Pack: pk.Name, Metrics: f.Metrics,
				Problem: fmt.Sprintf("not examined: the doctor's budget of %d requests is spent (--max-requests)", p.budget)}
			dg.Unexamined = append(dg.Unexamined, pk.Name)
		}
		if f.Fits() && f.Side == SideServer {
			f.ServerQueries, f.CallerQueries = lay.split(SideServer), lay.split(SideClient)
		}
		dg.Packs = append(dg.Packs, f)
	}
	dg.Requests = p.used
	if len(dg.Packs) == 0 {
		dg.Notes = append(dg.Notes, fmt.Sprintf("no metric of any pack has series at %s: check the Prometheus URL and that the exporters are scraped", at.UTC().Format(time.RFC3339)))
	}
	dg.Notes = append(dg.Notes, notes(dg, p.budget)...)
	for _, f := range dg.Packs {
		if f.Fits() {
			dg.Answers = append(dg.Answers, d.answers(ctx, f, layouts[f.Pack], opts, at)...)
		}
	}
	dg.Config = snippet(dg, opts.Context)
	return dg, nil
}

// sideMetrics is one side of a pack: its present metrics as stored, their
// selectors on that side, and the label names their series carry.
type sideMetrics struct {
	side                      string
	metrics, selectors, names []string
}

// examine finds the label that carries the service, on the pack's
// client-side metrics, then its server-side ones, then its pool's: first
// the label the pack's templates use on each side, then the labels real
// setups put the service in instead. Found client-side, it also finds the
// dependency's label value.
func (d *Doctor) examine(ctx context.Context, p *probe, pk *Pack, lay packLayout, present map[string]string, f *PackFinding, opts DoctorOptions) error {
	var sides []sideMetrics
	var problems, looked []string
	for _, side := range doctorSides {
		var ms, sels []string
		for _, m := range lay.metrics[side] {
			if s, ok := present[m]; ok && !slices.Contains(ms, s) {
				ms, sels = append(ms, s), append(sels, lay.selector(side, m, s))
			}
		}
		if len(ms) == 0 {
			continue
		}
		names, err := p.labelNames(ctx, sels...)
		if err != nil {
			return err
		}
		if key := lay.key[side]; key != "" && !slices.Contains(names, key) {
			param := ParamDependency
			if side == SidePool {
				param = ParamPool
			}
			problems = append(problems, fmt.Sprintf("%s has no %s label (the %s); its labels: %s", metricList(ms), key, param, strings.Join(names, ", ")))
			continue
		}
		sides = append(sides, sideMetrics{side, ms, sels, names})
		looked = append(looked, ms...)
	}
	for phase := range 2 {
		for _, s := range sides {
			label, value, err := p.findService(ctx, serviceCandidates(phase, lay.service[s.side], s.names), s.selectors, opts.Service, pk.Match[ParamService])
			if err != nil {
				return err
			}
			if label != "" {
				return d.found(ctx, p, lay, s, label, value, f, opts)
			}
		}
	}
	switch {
	case len(sides) == 0:
	case opts.Service != "":
		problems = append(problems, fmt.Sprintf("no label of %s has the value %q", metricList(looked), opts.Service))
	default:
		problems = append(problems, fmt.Sprintf("no label of %s names one service per series (job values are shared scrape jobs)", metricList(looked)))
	}
	f.Problem = strings.Join(problems, "; ")
	return nil
}

// serviceCandidates are the labels to try on a side: in phase 0 the one
// the pack's templates use there, in phase 1 the others real setups use.
func serviceCandidates(phase int, own string, names []string) []string {
	if phase == 0 {
		if slices.Contains(names, own) {
			return []string{own}
		}
		return nil
	}
	var out []string
	for _, c := range serviceLabelCandidates {
		if c != own && slices.Contains(names, c) {
			out = append(out, c)
		}
	}
	return out
}

// found records the service's label on side s and, client-side, finds the
// dependency's value.
func (d *Doctor) found(ctx context.Context, p *probe, lay packLayout, s sideMetrics, label, value string, f *PackFinding, opts DoctorOptions) error {
	f.Side, f.ServiceLabel, f.ServiceValue = s.side, label, value
	if own := lay.service[s.side]; label != own {
		f.Labels = map[string]string{lay.override[s.side]: label}
	}
	if s.side != SideClient {
		return nil
	}
	f.DependencyLabel = lay.key[SideClient]
	if opts.Dependency == "" {
		return nil
	}
	pk, _ := d.Catalog.Pack(f.Pack)
	var err error
	f.DependencyValue, f.DependencyForm, err = p.findDependency(ctx, f.DependencyLabel, s.selectors, opts.Dependency)
	if err != nil {
		return err
	}
	switch {
	case f.DependencyValue == "":
		f.Problem = fmt.Sprintf("no %s value of %s names %q", f.DependencyLabel, metricList(s.metrics), opts.Dependency)
	case f.DependencyForm != MatchExact && f.DependencyForm != pk.Match[ParamDependency]:
		f.Problem = fmt.Sprintf("%s takes the %s form (%q) and the pack matches names exactly: pass --dependency %q", f.DependencyLabel, f.DependencyForm, f.DependencyValue, f.DependencyValue)
	}
	return nil
}

// metricList names a few metrics for a message.
func metricList(ms []string) string {
	if len(ms) <= 2 {
		return strings.Join(ms, " and ")
	}
	return fmt.Sprintf("%s, %s and %d more", ms[0], ms[1], len(ms)-2)
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
// with the suggested configuration. For a service seen only server-side,
// the queries that need the caller's side are evaluated with the service as
// the dependency: what its callers see, where they export the pack's
// client-side metrics.
func (d *Doctor) answers(ctx context.Context, f PackFinding, lay packLayout, opts DoctorOptions, at time.Time) []Answer {
	var out []Answer
	for _, q := range d.Catalog.Queries() {
		if !slices.Contains(q.Answers(), f.Pack) {
			continue
		}
		a := Answer{Query: q.ID, Pack: f.Pack}
		p := Params{Service: opts.Service, Dependency: opts.Dependency, Labels: f.Labels}
		callers := f.Side == SideServer && lay.needs[q.ID] == SideClient
		if callers {
			if opts.Service == "" || !q.declares(ParamDependency) {
				a.NoData = fmt.Sprintf("needs the caller's side: the service is seen only server-side here, and %s reads its calls", q.ID)
				out = append(out, a)
				continue
			}
			// The callers' own labels are the pack's: the overrides found
			// on the service's side may not hold for them.
			a.From, p = "callers", Params{Dependency: opts.Service}
		}
		r, err := d.Catalog.Render(q.ID, f.Pack, p)
		if err != nil {
			a.Error = err.Error()
			out = append(out, a)
			continue
		}
		a.Bound = r.Bound
		res := d.Runner.Run(ctx, Request{Key: "doctor|" + q.ID + "|" + f.Pack + "|" + a.From, Expr: r.Expr, Time: at, Metrics: r.Metrics})
		for _, s := range res.Series {
			// A callers' value that does not name the dependency is the
			// caller's total (retries per request at its edge), not theirs to it.
			if callers && s.Labels[lay.key[SideClient]] == "" {
				continue
			}
			a.Values = append(a.Values, AnswerValue{Labels: s.Labels, Value: s.Value, Status: r.Threshold.Evaluate(s.Value)})
		}
		switch {
		case res.Err != nil:
			a.Error = res.Err.Error()
		case callers && len(a.Values) == 0:
			why := "no series"
			if res.NoData != nil {
				why = res.NoData.Message
			}
			a.NoData = fmt.Sprintf("needs the caller's side: no caller's metrics name %s as their dependency (%s)", opts.Service, why)
		case res.NoData != nil:
			a.NoData = res.NoData.Message
		}
		out = append(out, a)
	}
	return out
}
