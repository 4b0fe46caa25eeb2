package signals

import (
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/queries"
)

// DefaultTop is how many worst series of each query the fleet view asks
// for: a screen's worth.
const DefaultTop = 20

// Fleet reports whether the plan is the fleet view.
func (p Plan) Fleet() bool { return p.Service == "" && p.Top > 0 }

// Drill is the plan of one service of the fleet: every series of every
// query in focus for that service.
func (p Plan) Drill(service string) Plan {
	p.Service = service
	return p
}

func (p Plan) ids() []string {
	if len(p.Queries) > 0 {
		return p.Queries
	}
	var ids []string
	for _, q := range p.Catalog.Queries() {
		ids = append(ids, q.ID)
	}
	return ids
}

// fleetTargets renders each query once per distinct pack (the default, and
// those of configured services), reduced to its Top worst series: the
// number of requests does not grow with the fleet.
func (p Plan) fleetTargets() []Target {
	type packLabels struct {
		pack   string
		labels map[string]string
	}
	packs := []packLabels{{pack: queries.DefaultPack}}
	seen := map[string]bool{queries.DefaultPack + "|": true}
	var errs []Target
	for _, svc := range p.Services {
		if p.PackFor == nil {
			break
		}
		pack, labels, err := p.PackFor(svc)
		if err != nil {
			errs = append(errs, Target{Query: &queries.Query{ID: "config", Title: "config"}, Key: "config|" + svc, Err: err})
			continue
		}
		k := pack + "|" + labelsKey(labels)
		if !seen[k] {
			seen[k] = true
			packs = append(packs, packLabels{pack, labels})
		}
	}
	var out []Target
	for _, id := range p.ids() {
		q, err := p.Catalog.Query(id)
		if err != nil {
			out = append(out, Target{Query: &queries.Query{ID: id, Title: id}, Key: id, Err: err})
			continue
		}
		for _, pl := range packs {
			var f *queries.Fleet
			if p.Recorded && len(pl.labels) == 0 { // the rules are exported with each pack's own labels
				f, err = p.Catalog.RenderRecordedFleet(id, pl.pack, p.Top)
			} else {
				f, err = p.Catalog.RenderFleet(id, pl.pack, queries.Params{Labels: pl.labels}, p.Top)
			}
			var unsupported *queries.UnsupportedError
			if errors.As(err, &unsupported) {
				continue
			}
			t := Target{Query: q, Key: "dash|fleet|" + id + "|" + pl.pack + "|" + labelsKey(pl.labels), Err: err, Fleet: f}
			if f != nil {
				t.Rendered = f.Rendered
			}
			out = append(out, t)
		}
	}
	return append(out, errs...)
}

func labelsKey(labels map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		b.WriteString(k + "=" + labels[k] + ",")
	}
	return b.String()
}
