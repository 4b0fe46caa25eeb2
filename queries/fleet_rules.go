package queries

import (
	"errors"
	"fmt"
	"strconv"
)

// DefaultRulesTop is how many worst series the fleet recording rules keep
// per query: the dashboard's default --top (signals.DefaultTop).
const DefaultRulesTop = 20

// FleetTopLabel is the label of the fleet recording rules that holds their
// N, so a reader asking for another N finds nothing rather than too few.
const FleetTopLabel = "stormctl_top"

// FleetTopName and FleetLevelsName are the recording-rule names of a
// query's fleet reduction: its worst N series and its level counts, e.g.
// stormctl:amplification:fleet_top.
func (q *Query) FleetTopName() string    { return "stormctl:" + q.ID + ":fleet_top" }
func (q *Query) FleetLevelsName() string { return "stormctl:" + q.ID + ":fleet_levels" }

// RulesWithFleet is Rules plus, after each query's recording rule and in
// the same group, two rules recording the fleet reduction of the recorded
// series (see FleetRules); top <= 0 leaves them out. In one group they are
// evaluated in order at the same time, so each reduces what was just
// recorded.
func (c *Catalog) RulesWithFleet(pack string, p Params, top int) ([]byte, error) {
	return c.rules(pack, p, top, true)
}

// FleetRules is only the fleet recording rules of pack (every pack when
// ""), one group stormctl-<pack>-fleet each: topk (bottomk for a "below"
// threshold) of the top worst recorded series, labelled
// stormctl_fleet="worst", and count_values of their levels, both labelled
// stormctl_top=<top>. promtool cannot backfill rules that read other rules
// of the same file, so a backfill evaluates these after Rules' series.
func (c *Catalog) FleetRules(pack string, top int) ([]byte, error) {
	return c.rules(pack, Params{}, top, false)
}

// fleetRules are the two fleet recording rules of q over the recorded
// series of pack.
func fleetRules(q *Query, r *Rendered, top int) []rule {
	top = min(top, MaxTop)
	rec := fmt.Sprintf("%s{pack=%s}", q.RecordName(), quote(r.Pack))
	fn := "topk"
	if r.Threshold.Direction == Below {
		fn = "bottomk"
	}
	labels := func() map[string]string {
		return map[string]string{"pack": r.Pack, FleetTopLabel: strconv.Itoa(top)}
	}
	return []rule{
		{Record: q.FleetTopName(), Labels: labels(),
			Expr: fmt.Sprintf("label_replace(%s(%d, %s), %q, %q, \"\", \"\")", fn, top, rec, FleetLabel, partWorst)},
		{Record: q.FleetLevelsName(), Labels: labels(),
			Expr: fmt.Sprintf("count_values(%q, %s)", FleetLabel, levelExpr(rec, r.Threshold))},
	}
}

// recordedFleetExpr reads the fleet recording rules of q for pack and top
// as a fleet expression (see fleetExpr): Prometheus moves and evaluates
// only the top worst series and the level counts.
func recordedFleetExpr(q *Query, pack string, top int) string {
	sel := fmt.Sprintf("{pack=%s,%s=%q}", quote(pack), FleetTopLabel, strconv.Itoa(top))
	// The worst lose stormctl_top, to carry the labels of the series they are.
	return fmt.Sprintf("label_replace(%s%s, %q, \"\", \"\", \"\")\nor %s%s",
		q.FleetTopName(), sel, FleetTopLabel, q.FleetLevelsName(), sel)
}

// rules is Rules (base) with the fleet rules of top > 0 (see
// RulesWithFleet), or only the fleet rules (!base, see FleetRules).
func (c *Catalog) rules(pack string, p Params, top int, base bool) ([]byte, error) {
	packs, err := c.packsNamed(pack)
	if err != nil {
		return nil, err
	}
	var f ruleFile
	for _, pk := range packs {
		g := ruleGroup{Name: "stormctl-" + pk.Name}
		if !base {
			g.Name += "-fleet"
		}
		for _, q := range c.queries {
			r, err := c.Render(q.ID, pk.Name, p)
			var unsupported *UnsupportedError
			if errors.As(err, &unsupported) {
				continue
			}
			if err != nil {
				return nil, err
			}
			if base {
				g.Rules = append(g.Rules, queryRules(q, r)...)
			}
			if top > 0 {
				g.Rules = append(g.Rules, fleetRules(q, r, top)...)
			}
		}
		if len(g.Rules) > 0 {
			f.Groups = append(f.Groups, g)
		}
	}
	return marshalRules(f)
}
