package queries

import (
	"fmt"
	"strings"
	"text/template"
	"time"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/suggest"
)

// Catalog is the loaded set of queries and packs.
type Catalog struct {
	queries []*Query
	byID    map[string]*Query
	packs   []*Pack
	byName  map[string]*Pack
}

// Pack is a family of metric names a query can be answered from.
type Pack struct {
	Name, Title, Description string
	// Labels maps a param to this pack's label name, e.g. dependency → envoy_cluster_name,
	// and any other label name its templates write to the name this pack's
	// exporter uses (envoy-istio: envoy_response_code → response_code).
	// A param without an entry uses its own name as the label.
	Labels map[string]string
	// Match is the naming convention of a param's values (MatchFQDN, ...);
	// a param without an entry is matched exactly.
	Match map[string]string
	// Extends names the pack whose templates answer the queries this pack
	// has no template of its own for, rendered with this pack's Labels.
	Extends string

	otherwise string // why the pack cannot answer a query it has no entry for
}

// Query is one saved query: what it means, when it is bad, and how each
// pack computes it.
type Query struct {
	ID, Title, Meaning, Action string
	Unit                       string   // ratio | percent | seconds | count | per_second
	Params                     []string // of service, dependency, pool, window
	Window                     time.Duration
	Threshold                  Threshold
	Packs                      map[string]*PackQuery

	answers []string
	src     origin
}

// PackQuery is how one pack computes one query.
type PackQuery struct {
	Expr        string   // text/template source; see the package's template functions
	Metrics     []string // metric names it reads
	Bound       string   // "" exact, "lower" or "upper"
	Note        string   // caveat shown with every result of this pack
	Unsupported string   // non-empty: this pack cannot answer the query, and why

	tmpl *template.Template
	src  origin
}

// Units a query's value can have.
var Units = []string{"ratio", "percent", "seconds", "count", "per_second"}

// Queries returns every query: the built-ins in the order of DOMAIN.md's
// signals table (amplification first), then queries added by user files in
// the order they were loaded (directories as given, files by name, entries
// in file order). A user file that redefines an id keeps its place.
func (c *Catalog) Queries() []*Query { return append([]*Query(nil), c.queries...) }

// Packs returns every pack: the built-ins (stormctl first), then user packs
// in load order.
func (c *Catalog) Packs() []*Pack { return append([]*Pack(nil), c.packs...) }

// Query returns the query with this id, or a *NotFoundError (exit 2) that
// suggests close ids.
func (c *Catalog) Query(id string) (*Query, error) {
	if q, ok := c.byID[id]; ok {
		return q, nil
	}
	ids := make([]string, len(c.queries))
	for i, q := range c.queries {
		ids[i] = q.ID
	}
	return nil, &NotFoundError{Kind: "query", Name: id, Suggestions: suggest.Closest(id, ids)}
}

// Pack returns the named pack, or a *NotFoundError (exit 2).
func (c *Catalog) Pack(name string) (*Pack, error) {
	if p, ok := c.byName[name]; ok {
		return p, nil
	}
	return nil, &NotFoundError{Kind: "pack", Name: name, Suggestions: suggest.Closest(name, c.packNames())}
}

func (c *Catalog) packNames() []string {
	names := make([]string, len(c.packs))
	for i, p := range c.packs {
		names[i] = p.Name
	}
	return names
}

// Answers returns the packs that can answer q, in catalogue pack order.
func (q *Query) Answers() []string { return append([]string(nil), q.answers...) }

// PackQueries returns, per pack name, how each pack computes q, including
// the templates a pack inherits from the pack it extends.
func (c *Catalog) PackQueries(q *Query) map[string]*PackQuery {
	out := map[string]*PackQuery{}
	for _, pk := range c.packs {
		if pq := q.packQuery(pk); pq != nil {
			out[pk.Name] = pq
		}
	}
	return out
}

// packQuery is how pk answers q: its own template, else its base pack's.
func (q *Query) packQuery(pk *Pack) *PackQuery {
	if pq := q.Packs[pk.Name]; pq != nil || pk.Extends == "" {
		return pq
	}
	return q.Packs[pk.Extends]
}

func (q *Query) declares(param string) bool {
	for _, p := range q.Params {
		if p == param {
			return true
		}
	}
	return false
}

// NotFoundError is an unknown query id or pack name. It exits 2.
type NotFoundError struct {
	Kind, Name  string // Kind: "query" or "pack"
	Suggestions []string
}

func (e *NotFoundError) Error() string {
	msg := fmt.Sprintf("unknown %s %q", e.Kind, e.Name)
	if len(e.Suggestions) > 0 {
		msg += " (did you mean " + strings.Join(e.Suggestions, " or ") + "?)"
	}
	if e.Kind == "query" {
		return msg + "; `stormctl query list` shows every query"
	}
	return msg
}

// ExitCode implements exit.Coder.
func (e *NotFoundError) ExitCode() int { return exit.Usage }
