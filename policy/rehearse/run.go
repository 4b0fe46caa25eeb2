package rehearse

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/prometheus/prometheus/promql"

	"github.com/stormctl/stormctl/lab"
	"github.com/stormctl/stormctl/policy"
)

// Tolerance is how far a simulated figure may be from the predicted one
// (relative) and still agree: the lab samples jitter and arrivals, and
// counts whole scrape seconds.
const Tolerance = 0.10

// Comparison is the rehearsal's outcome; its JSON shape is stable.
type Comparison struct {
	Scenario  string   `json:"scenario"`
	Class     string   `json:"class"`
	Seed      uint64   `json:"seed"`
	Tolerance float64  `json:"tolerance"`
	Rows      []Row    `json:"rows"`
	Agree     bool     `json:"agree"`
	Notes     []string `json:"notes,omitempty"`
}

// Row is one figure, predicted and simulated.
type Row struct {
	Metric    string   `json:"metric"`
	Predicted *float64 `json:"predicted"`
	Simulated *float64 `json:"simulated"`
	Agree     bool     `json:"agree"`
}

// Prediction is what the arithmetic says the rehearsal will measure: the
// walk of class c with mean sleeps (the lab jitters), and the entry's
// admissions capped by its pool.
func Prediction(p *policy.Path, c policy.Class) map[string]*float64 {
	w := p.WalkClass(c, true)
	out := map[string]*float64{"amplification": fin(w.Attempts), "occupancy_s": fin(w.Occupancy)}
	if p.Rate <= 0 || math.IsInf(w.Occupancy, 0) {
		return out
	}
	demand := p.Rate * w.Occupancy
	admitted := p.Rate
	out["demanded_concurrency"] = fin(demand)
	if pl := p.Hops[0].Pool; pl != nil {
		capacity := float64(pl.Capacity())
		out["pool_saturation"] = fin(math.Min(1, demand/capacity))
		if w.Occupancy > 0 {
			admitted = math.Min(admitted, capacity/w.Occupancy)
		}
	}
	out["dependency_attempts_per_s"] = fin(admitted * w.Attempts)
	return out
}

// Metrics lists the compared figures in output order.
var Metrics = []string{"amplification", "occupancy_s", "demanded_concurrency", "pool_saturation", "dependency_attempts_per_s"}

// Run builds the scenario of p failing in class c, runs it in the lab as
// fast as it goes, and compares.
func Run(ctx context.Context, p *policy.Path, c policy.Class, seed uint64) (*Comparison, error) {
	sc, _, notes, err := Scenario(p, c)
	if err != nil {
		return nil, err
	}
	l, err := lab.New(lab.Options{Scenario: sc, Seed: seed, Until: FaultAt + FaultFor + sc.ScrapeInterval.D()})
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	defer l.Close()
	if err := l.Run(ctx); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	m := &measurer{ctx: ctx, l: l, at: l.Epoch.Add(FaultAt + FaultFor)}
	entry, pool := sc.Services[0].Name, sc.Services[0].Pools[0].Name
	last := sc.Services[len(sc.Services)-1].Name
	dep := sc.Dependencies[0].Name
	sel := func(kv ...string) string {
		s := "{"
		for i := 0; i < len(kv); i += 2 {
			if i > 0 {
				s += ","
			}
			s += kv[i] + "=" + strconv.Quote(kv[i+1])
		}
		return s + "}"
	}
	w := "[" + Window.String() + "]"
	sub := "[" + Window.String() + ":" + sc.ScrapeInterval.D().String() + "]"
	admitted := "sum(rate(stormctl_requests_total" + sel("service", entry) + w + "))"
	inUse := "avg_over_time(sum(stormctl_pool_in_use" + sel("service", entry, "pool", pool) + ")" + sub + ")"
	sim := map[string]*float64{
		"amplification":             m.value("sum(rate(stormctl_attempts_total" + sel("service", last, "dependency", dep) + w + ")) / " + admitted),
		"occupancy_s":               m.value(inUse + " / " + admitted),
		"pool_saturation":           m.value(inUse + " / sum(stormctl_pool_capacity" + sel("service", entry, "pool", pool) + ")"),
		"dependency_attempts_per_s": m.value("sum(rate(stormctl_attempts_total" + sel("dependency", dep) + w + "))"),
	}
	if o := sim["occupancy_s"]; o != nil {
		sim["demanded_concurrency"] = fin(p.Rate * *o)
	}
	if p.Hops[0].Pool == nil {
		// The lab's stand-in pool is not the path's: nothing to compare.
		sim["pool_saturation"] = nil
	}
	if m.err != nil {
		return nil, m.err
	}
	pred := Prediction(p, c)
	notes = append(notes, innerSaturation(p, c)...)
	if o := pred["occupancy_s"]; o != nil && *o > (FaultFor-Window).Seconds() {
		notes = append(notes, fmt.Sprintf("a request holds the entry %gs, longer than the lab's fault runs before it measures (%s): the simulated figures fall short of the worst case", *o, FaultFor-Window))
	}
	cmp := &Comparison{Scenario: sc.Name, Class: c.String(), Seed: seed, Tolerance: Tolerance, Agree: true, Notes: notes}
	// The lab answers a fast failure in 1 ms, and a scrape second blurs a
	// gauge: slack on top of the relative tolerance.
	slack := map[string]float64{"occupancy_s": 0.002**pred["amplification"] + 0.005, "pool_saturation": 0.01}
	slack["demanded_concurrency"] = p.Rate * slack["occupancy_s"]
	for _, k := range Metrics {
		r := Row{Metric: k, Predicted: pred[k], Simulated: sim[k]}
		r.Agree = agree(r.Predicted, r.Simulated, slack[k])
		cmp.Agree = cmp.Agree && r.Agree
		cmp.Rows = append(cmp.Rows, r)
	}
	return cmp, nil
}

// agree: both known and within Tolerance (plus slack) of each other.
func agree(p, s *float64, slack float64) bool {
	if p == nil || s == nil {
		return p == nil && s == nil
	}
	return math.Abs(*s-*p) <= Tolerance*math.Abs(*p)+slack
}

func fin(v float64) *float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil
	}
	r := math.Round(v*1000) / 1000
	return &r
}

type measurer struct {
	ctx context.Context
	l   *lab.Lab
	at  time.Time
	err error
}

// value evaluates expr at the end of the fault on the lab's own engine.
func (m *measurer) value(expr string) *float64 {
	if m.err != nil {
		return nil
	}
	q, err := m.l.DB.Engine.NewInstantQuery(m.ctx, m.l.DB.Store, nil, expr, m.at)
	if err != nil {
		m.err = fmt.Errorf("lab query %s: %w", expr, err)
		return nil
	}
	defer q.Close()
	res := q.Exec(m.ctx)
	if res.Err != nil {
		m.err = fmt.Errorf("lab query %s: %w", expr, res.Err)
		return nil
	}
	vec, ok := res.Value.(promql.Vector)
	if !ok || len(vec) == 0 {
		return nil
	}
	return fin(vec[0].F)
}

// innerSaturation names the pools below the entry that the walk fills:
// the lab rejects what does not fit, which the worst case does not model.
func innerSaturation(p *policy.Path, c policy.Class) []string {
	w := p.WalkClass(c, true)
	var out []string
	for i, h := range p.Hops {
		if i == 0 || h.Pool == nil {
			continue
		}
		demand := p.Rate * w.Calls[i] * w.Hold[i]
		if capacity := float64(h.Pool.Capacity()); demand > capacity {
			out = append(out, fmt.Sprintf("%s's pool fills (%.0f demanded of %.0f): the lab rejects what does not fit, which the worst case does not model; raise it to compare", h.Service, demand, capacity))
		}
	}
	return out
}
