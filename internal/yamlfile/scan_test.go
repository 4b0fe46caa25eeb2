package yamlfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

var small = Limits{MaxBytes: 1 << 20, MaxDepth: 4, MaxNodes: 50, MaxKeys: 5}

func TestCheckLimits(t *testing.T) {
	cases := []struct {
		name, src string
		line, col int    // 0: within the limits
		msg       string // part of the message
	}{
		{"flow depth", "a: [[[[[1]]]]]\n", 1, 7, "nested more than 4"},
		{"json depth", "{\"a\": {\"b\": [[{\"c\": 1}]]}}", 1, 15, "nested more than 4"},
		{"block depth", "a:\n  b:\n    c:\n      d:\n        e: 1\n", 5, 9, "nested more than 4"},
		{"compact sequences", "- - - - - x\n", 1, 9, "nested more than 4"},
		{"depth 4 is fine", "a:\n  b:\n    c:\n      d: 1\n", 0, 0, ""},
		{"siblings do not nest", "a:\n  b: 1\nc:\n  d:\n    e: 1\n", 0, 0, ""},
		{"sequence under a key", "a:\n- b: 1\n- c:\n    d: 1\n", 0, 0, ""},
		{"keys", "a: 1\nb: 2\nc: 3\nd: 4\ne: 5\nf: 6\n", 6, 1, "more than 5 keys"},
		{"flow keys", "{a: 1, b: 2, c: 3, d: 4, e: 5, f: 6}", 1, 33, "more than 5 keys"},
		{"json keys", `{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6}`, 1, 35, "more than 5 keys"},
		{"nodes", "[" + strings.Repeat("1,", 60) + "1]", 1, 100, "more than 50 values"},
		{"brackets in quotes", "a: '[[[[[['\nb: \"{{{{{{\\\"[[[[\"\n", 0, 0, ""},
		{"brackets in a comment", "a: 1 # [[[[[[[\n", 0, 0, ""},
		{"brackets in a plain scalar", "a: x[[[[[[\n", 0, 0, ""},
		{"brackets in a block scalar", "a: |\n  [[[[[[[[\n  - - - - - -\nb: 1\n", 0, 0, ""},
		{"block scalar ends", "a:\n  b: |\n    text\n  c:\n    d:\n      e:\n        f: 1\n", 7, 9, "nested more than 4"},
		{"quote inside a plain scalar", "a: it's\nb: [[[[[1]]]]]\n", 2, 7, "nested more than 4"},
		{"multi-line quoted", "a: \"x\n  [[[[[[ y\"\nb: 1\n", 0, 0, ""},
		{"documents reset", "a:\n  b:\n    c: 1\n---\nd:\n  e:\n    f: 1\n", 0, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Check("f.yaml", []byte(c.src), small)
			if c.line == 0 {
				if err != nil {
					t.Fatalf("want no error, got %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("want *Error, got %v", err)
			}
			if !e.Limit || e.Line != c.line || e.Col != c.col || !strings.Contains(e.Msg, c.msg) {
				t.Fatalf("got %v (limit %v), want %d:%d %q", e, e.Limit, c.line, c.col, c.msg)
			}
		})
	}
}

func TestAliasBomb(t *testing.T) {
	src := "a: &a [x, x, x, x, x, x, x, x, x, x]\n" +
		"b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n" +
		"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n" +
		"d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n" +
		"e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n" +
		"f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
	var v map[string]any
	err := Decode("bomb.yaml", []byte(src), &v)
	var e *Error
	if !errors.As(err, &e) || !e.Limit {
		t.Fatalf("want a limit error, got %v", err)
	}
	// 10^5 values under e reach the default limit first: at e's fourth... its
	// sequence, on line 5.
	if e.File != "bomb.yaml" || e.Line != 5 || e.Col == 0 || !strings.Contains(e.Msg, "aliases expand") {
		t.Fatalf("got %v", e)
	}
	// A few aliases are fine.
	if err := Decode("ok.yaml", []byte("a: &a [1, 2]\nb: *a\nc: *a\n"), &v); err != nil {
		t.Fatal(err)
	}
}

func TestReadFileTooBig(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(p, make([]byte, 2048), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(p, Limits{MaxBytes: 1024})
	if !IsLimit(err) || !strings.Contains(err.Error(), "big.yaml: file is 2 KiB; the limit is 1 KiB") {
		t.Fatalf("got %v", err)
	}
	if data, err := ReadFile(p, Limits{MaxBytes: 4096}); err != nil || len(data) != 2048 {
		t.Fatalf("got %d bytes, %v", len(data), err)
	}
}

func TestDefaultLimitsFromEnv(t *testing.T) {
	t.Setenv(EnvMaxNodes, "500000")
	t.Setenv(EnvMaxDepth, "nonsense")
	l := DefaultLimits()
	if l.MaxNodes != 500000 || l.MaxDepth != defaultMaxDepth || l.MaxBytes != defaultMaxBytes {
		t.Fatalf("got %+v", l)
	}
}

// TestProjectFilesWithinLimits: every YAML and JSON file in the repository
// passes the default limits with room to spare (the deepest, the CRD
// schemas the Kubernetes tests install, nest 20 deep).
func TestProjectFilesWithinLimits(t *testing.T) {
	quarter := Limits{MaxBytes: defaultMaxBytes / 4, MaxDepth: defaultMaxDepth / 2, MaxNodes: defaultMaxNodes / 4, MaxKeys: defaultMaxKeys / 4}
	n := 0
	for _, f := range projectFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := Check(f, data, quarter); err != nil {
			t.Errorf("%v", err)
		}
		n++
	}
	if n < 50 {
		t.Fatalf("found only %d files", n)
	}
}

func projectFiles(t testing.TB) []string {
	var out []string
	err := filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), "fuzz")) {
			return filepath.SkipDir
		}
		switch filepath.Ext(p) {
		case ".yaml", ".yml", ".json":
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// depth is the nesting of collections in a parsed tree.
func depth(n ast.Node) int {
	best := 0
	sub := func(c ast.Node) {
		if d := depth(c); d > best {
			best = d
		}
	}
	switch v := n.(type) {
	case *ast.MappingNode:
		for _, mv := range v.Values {
			sub(mv.Key)
			sub(mv.Value)
		}
		return best + 1
	case *ast.MappingValueNode:
		sub(v.Key)
		sub(v.Value)
		return best + 1
	case *ast.SequenceNode:
		for _, it := range v.Values {
			sub(it)
		}
		return best + 1
	case *ast.AnchorNode:
		return depth(v.Value)
	case *ast.TagNode:
		return depth(v.Value)
	case *ast.MappingKeyNode:
		return depth(v.Value)
	}
	return 0
}

// FuzzCheck: Check never panics, every limit error names the file and a
// line, and what it lets through never nests deeper than the limit once
// parsed (so the parser never sees a deep file).
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"a: [[1]]\n", "- - - x\n", "a:\n  b:\n    c: 1\n", "a: |\n  [[[\nb: 1\n",
		"{\"a\": [1, {\"b\": 2}]}", "a: 'it''s'\nb: \"x\\\"\"\n", "a: &x [1]\nb: *x\n", "? a\n: b\n", "a: b # [\n"} {
		f.Add(s)
	}
	lim := Limits{MaxBytes: 1 << 16, MaxDepth: 6, MaxNodes: 200, MaxKeys: 20}
	f.Fuzz(func(t *testing.T, src string) {
		var err error
		within(t, "Check", src, func() { err = Check("f.yaml", []byte(src), lim) })
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.File != "f.yaml" || e.Line == 0 || e.Line > strings.Count(src, "\n")+1 {
				t.Fatalf("bad error %v", err)
			}
			return
		}
		var file *ast.File
		var perr error
		within(t, "parse", src, func() { file, perr = parseQuietly(src) })
		if perr != nil {
			return
		}
		for _, d := range file.Docs {
			// A mapping value counts twice in the tree (the pair and the
			// mapping), so the tree is at most twice as deep.
			if got := depth(d.Body); got > 2*lim.MaxDepth+2 {
				t.Fatalf("Check passed a tree %d deep", got)
			}
		}
	})
}

func within(t *testing.T, what, src string, f func()) {
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatalf("%s hangs on %q", what, src)
	}
}

func parseQuietly(src string) (f *ast.File, err error) {
	defer func() {
		if recover() != nil {
			f, err = nil, errors.New("panic")
		}
	}()
	return parser.ParseBytes([]byte(src), 0)
}
