package yamlfile

import (
	"github.com/goccy/go-yaml/ast"
)

// expansion returns an *Error at the first alias past which the document,
// with every alias replaced by what it names, would hold more than
// MaxNodes values ("billion laughs": each alias of an alias multiplies).
// Sizes are counted once per anchor, so the walk is linear in the file.
func expansion(file string, f *ast.File, lim Limits) *Error {
	z := sizer{file: file, max: lim.MaxNodes, anchors: map[string]int{}}
	total := 0
	for _, d := range f.Docs {
		if d == nil {
			continue
		}
		total += z.size(d.Body, 0)
		if z.err == nil && total > z.max {
			z.fail(d.Body)
		}
		if z.err != nil {
			return z.err
		}
	}
	return nil
}

type sizer struct {
	file    string
	max     int
	anchors map[string]int
	err     *Error
}

func (z *sizer) fail(n ast.Node) {
	line, col := 0, 0
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		line, col = tk.Position.Line, tk.Position.Column
	}
	z.err = limitErr(z.file, line, col, EnvMaxNodes,
		"aliases expand the document past %d values; the limit is %d", z.max, z.max)
}

// size counts n's values, aliases expanded, saturating just past max.
// depth guards the recursion; Check has bounded nesting already.
func (z *sizer) size(n ast.Node, depth int) int {
	if n == nil || z.err != nil || depth > 4*maxWalkDepth {
		return 0
	}
	sum := 1
	add := func(c ast.Node) {
		sum += z.size(c, depth+1)
		if sum > z.max {
			sum = z.max + 1
			if z.err == nil {
				z.fail(c)
			}
		}
	}
	switch v := n.(type) {
	case *ast.DocumentNode:
		return z.size(v.Body, depth+1)
	case *ast.MappingNode:
		for _, mv := range v.Values {
			add(mv)
		}
	case *ast.MappingValueNode:
		sum = 0
		add(v.Key)
		add(v.Value)
	case *ast.MappingKeyNode:
		return z.size(v.Value, depth+1)
	case *ast.SequenceNode:
		for _, it := range v.Values {
			add(it)
		}
	case *ast.TagNode:
		return z.size(v.Value, depth+1)
	case *ast.AnchorNode:
		s := z.size(v.Value, depth+1)
		if v.Name != nil {
			z.anchors[v.Name.GetToken().Value] = s
		}
		return s
	case *ast.AliasNode:
		if v.Value != nil {
			if s, ok := z.anchors[v.Value.GetToken().Value]; ok {
				sum = s
			}
		}
		if sum > z.max && z.err == nil {
			z.fail(v)
		}
	}
	if sum > z.max && z.err == nil {
		z.fail(n)
	}
	return sum
}

// maxWalkDepth bounds recursion over a parsed tree whatever the limits say.
const maxWalkDepth = 1024
