package queries

import (
	"sort"
	"strings"
)

// Key names a series by every label, sorted: "dependency=payments
// service=checkout", or "(all)" when it has none. It is the one name a
// series has in tables, JSON, charts and breach checks, so two results of
// the same query match series by it.
func (s Series) Key() string { return SeriesKey(s.Labels) }

// SeriesKey is Series.Key of a label set.
func SeriesKey(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + labels[k]
	}
	if len(parts) == 0 {
		return "(all)"
	}
	return strings.Join(parts, " ")
}
