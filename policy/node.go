package policy

import (
	"fmt"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/stormctl/stormctl/internal/suggest"
	"github.com/stormctl/stormctl/internal/yamlfile"
)

// maxVisits bounds the work on one file: aliases can make a small file
// expand exponentially ("billion laughs").
const maxVisits = 200_000

// doc is one parsed file: its YAML (or JSON) documents and the problems
// found while reading them, each with file:line:col.
type doc struct {
	file    string
	docs    []*node
	anchors map[string]ast.Node
	errs    yamlfile.Errors
	visits  int
	// entryCache keeps each mapping's entries: importers look keys up often.
	entryCache map[ast.Node][]entry
	// loose matches keys the way protobuf JSON and Spring Boot do:
	// num_retries, numRetries and num-retries are one key.
	loose bool
}

// node is one YAML value with its position.
type node struct {
	d *doc
	n ast.Node
}

// parseDoc parses data; a syntax error is returned with its position.
func parseDoc(file string, data []byte, loose bool) (d *doc, err yamlfile.Errors) {
	d = &doc{file: file, anchors: map[string]ast.Node{}, entryCache: map[ast.Node][]entry{}, loose: loose}
	defer func() {
		// The YAML library panics on some malformed input; user input must
		// get an error, never a crash.
		if r := recover(); r != nil {
			d, err = nil, yamlfile.Errors{{File: clean(file), Msg: clean(fmt.Sprintf("malformed YAML: %v", r))}}
		}
	}()
	// The bounded reader: limits are checked before the parser runs.
	yd, perr := yamlfile.Parse(file, data)
	if perr != nil {
		e, ok := perr.(*yamlfile.Error)
		if !ok {
			e = &yamlfile.Error{File: file, Msg: perr.Error()}
		}
		e.File, e.Msg = clean(e.File), clean(e.Msg)
		return nil, yamlfile.Errors{e}
	}
	for _, dn := range yd.AST().Docs {
		if dn == nil || dn.Body == nil {
			continue
		}
		d.collectAnchors(dn.Body, 0)
		d.docs = append(d.docs, &node{d: d, n: dn.Body})
	}
	return d, nil
}

func (d *doc) collectAnchors(n ast.Node, depth int) {
	if n == nil || depth > 200 {
		return
	}
	switch v := n.(type) {
	case *ast.AnchorNode:
		if v.Name != nil {
			d.anchors[v.Name.String()] = v.Value
		}
		d.collectAnchors(v.Value, depth+1)
	case *ast.TagNode:
		d.collectAnchors(v.Value, depth+1)
	case *ast.MappingNode:
		for _, mv := range v.Values {
			d.collectAnchors(mv.Value, depth+1)
		}
	case *ast.MappingValueNode:
		d.collectAnchors(v.Value, depth+1)
	case *ast.SequenceNode:
		for _, it := range v.Values {
			d.collectAnchors(it, depth+1)
		}
	}
}

// resolve unwraps anchors, tags and aliases.
func (d *doc) resolve(n ast.Node) ast.Node {
	for i := 0; i < 64 && n != nil; i++ {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		case *ast.AliasNode:
			if v.Value == nil {
				return nil
			}
			n = d.anchors[v.Value.String()]
		default:
			return n
		}
	}
	return nil
}

// bad records a problem at n (or at the file when n has no position).
func (d *doc) bad(n *node, fix, format string, args ...any) {
	e := &yamlfile.Error{File: clean(d.file), Msg: clean(fmt.Sprintf(format, args...)), Fix: fix}
	if n != nil {
		e.Line, e.Col = n.pos()
	}
	d.errs = append(d.errs, e)
}

func (n *node) pos() (line, col int) {
	if n == nil || n.n == nil {
		return 0, 0
	}
	at := n.n
	// A mapping's own token is the first colon: point at its first key.
	if m, ok := at.(*ast.MappingNode); ok && len(m.Values) > 0 && m.Values[0].Key != nil {
		at = m.Values[0].Key
	} else if mv, ok := at.(*ast.MappingValueNode); ok && mv.Key != nil {
		at = mv.Key
	}
	tk := at.GetToken()
	if tk == nil || tk.Position == nil {
		return 0, 0
	}
	return tk.Position.Line, tk.Position.Column
}

// where is the file:line:col of n, for a hop's source.
func (n *node) where() string {
	l, c := n.pos()
	if l == 0 {
		return clean(n.d.file)
	}
	return fmt.Sprintf("%s:%d:%d", clean(n.d.file), l, c)
}

func (n *node) value() ast.Node {
	if n == nil {
		return nil
	}
	n.d.visits++
	if n.d.visits == maxVisits {
		n.d.bad(n, "", "file too complex to read (more than %d values, counting aliases)", maxVisits)
	}
	if n.d.visits >= maxVisits {
		return nil
	}
	return n.d.resolve(n.n)
}

func (n *node) isMap() bool { _, ok := n.value().(*ast.MappingNode); return ok && n != nil }
func (n *node) isSeq() bool { _, ok := n.value().(*ast.SequenceNode); return ok && n != nil }
func (n *node) isNull() bool {
	v := n.value()
	_, ok := v.(*ast.NullNode)
	return v == nil || ok
}

// entry is one key of a mapping.
type entry struct {
	key string
	k   *node
	v   *node
}

// entries returns a mapping's keys in order, with merge keys (<<) expanded
// before the keys written beside them, which override them.
func (n *node) entries() []entry {
	v := n.value()
	if es, ok := n.d.entryCache[v]; ok {
		return es
	}
	var out []entry
	n.collect(&out, 0)
	if v != nil {
		n.d.entryCache[v] = out
	}
	return out
}

func (n *node) collect(out *[]entry, depth int) {
	m, ok := n.value().(*ast.MappingNode)
	if !ok || depth > 8 {
		return
	}
	for _, mv := range m.Values {
		if mv.Key != nil && mv.Key.IsMergeKey() {
			v := &node{d: n.d, n: mv.Value}
			if v.isSeq() {
				for _, it := range v.items() {
					it.collect(out, depth+1)
				}
			} else {
				v.collect(out, depth+1)
			}
			continue
		}
		key := ""
		if mv.Key != nil {
			if s, ok := n.d.resolve(mv.Key).(ast.ScalarNode); ok {
				key = fmt.Sprint(s.GetValue())
			} else {
				key = mv.Key.String()
			}
		}
		*out = append(*out, entry{key: key, k: &node{d: n.d, n: mv.Key}, v: &node{d: n.d, n: mv.Value}})
	}
}

// norm is the loose form of a key.
func norm(k string) string {
	b := make([]byte, 0, len(k))
	for i := 0; i < len(k); i++ {
		switch c := k[i]; {
		case c == '_' || c == '-':
		case 'A' <= c && c <= 'Z':
			b = append(b, c+'a'-'A')
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

func (n *node) match(a, b string) bool {
	if n.d.loose {
		return norm(a) == norm(b)
	}
	return a == b
}

// get returns the value of key, the last one written winning, or nil.
func (n *node) get(key string) *node {
	if n == nil {
		return nil
	}
	var found *node
	for _, e := range n.entries() {
		if n.match(e.key, key) {
			found = e.v
		}
	}
	return found
}

// path follows keys through nested mappings.
func (n *node) path(keys ...string) *node {
	for _, k := range keys {
		if n = n.get(k); n == nil {
			return nil
		}
	}
	return n
}

// known reports every key of n that is not in keys: a strict file.
func (n *node) known(what string, keys ...string) {
	for _, e := range n.entries() {
		ok := false
		for _, k := range keys {
			if n.match(e.key, k) {
				ok = true
			}
		}
		if !ok {
			fix := "one of " + strings.Join(keys, ", ")
			if s := suggest.Closest(e.key, keys); len(s) > 0 {
				fix = "did you mean " + strings.Join(s, " or ") + "?"
			}
			n.d.bad(e.k, fix, "unknown field %q in %s", e.key, what)
		}
	}
}

func (n *node) items() []*node {
	s, ok := n.value().(*ast.SequenceNode)
	if !ok {
		return nil
	}
	out := make([]*node, 0, len(s.Values))
	for _, v := range s.Values {
		out = append(out, &node{d: n.d, n: v})
	}
	return out
}
