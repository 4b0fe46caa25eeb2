package tui

import (
	"fmt"
	"strings"

	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/queries"
)

// noteCuts lists, for the banner, the answers of a refresh that Prometheus
// sent larger than a cap (bytes, series, the shared budget): their panels
// show only the first series, so the worst may be missing. One line per
// cap and server, naming the queries it cut and the way out.
func (m *Model) noteCuts(results []queries.Result) {
	names := map[string]string{}
	for _, t := range m.targets {
		name := t.Query.ID
		if t.Service != "" {
			name += " (" + t.Service + ")"
		}
		names[t.Key] = name
	}
	var order []string
	cut, hints := map[string][]string{}, map[string]string{}
	for _, r := range results {
		w := queries.CutWarning(r.Warnings)
		if w == "" {
			continue
		}
		// "at WHAT (WHY): ADDR sent more, only the first K series are
		// kept; HINT": K differs between answers cut at the same cap.
		w = strings.TrimSpace(strings.TrimPrefix(w, queries.CutPrefix))
		head, rest, _ := strings.Cut(w, ", only the first ")
		if _, seen := cut[head]; !seen {
			order = append(order, head)
			if _, hint, ok := strings.Cut(rest, "; "); ok {
				hints[head] = "; " + hint
			}
		}
		cut[head] = append(cut[head], names[r.Request.Key])
	}
	m.banner.cuts = m.banner.cuts[:0]
	for _, head := range order {
		qs := cut[head]
		list := strings.Join(qs[:min(len(qs), 3)], ", ")
		if len(qs) > 3 {
			list += fmt.Sprintf(" and %d more", len(qs)-3)
		}
		m.banner.cuts = append(m.banner.cuts, sanitize.Line("answers cut "+head+" than kept for "+list+hints[head]))
	}
	m.layout()
}
