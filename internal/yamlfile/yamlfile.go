// Package yamlfile decodes stormctl's YAML files (config, query catalogues,
// playbooks) strictly, and reports every problem as file:line:col.
package yamlfile

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Error is one problem in a YAML file, with its position and, where one is
// known, the fix.
type Error struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
	Col  int    `json:"col,omitempty"`
	Msg  string `json:"message"`
	Fix  string `json:"fix,omitempty"`
	// Limit marks an input that crossed one of the Limits.
	Limit bool `json:"limit,omitempty"`
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	if e.Fix != "" {
		b.WriteString(" (")
		b.WriteString(e.Fix)
		b.WriteString(")")
	}
	return b.String()
}

// Errors is a list of problems found in one or more files; it is itself an error.
type Errors []*Error

// MaxShown is how many problems Errors.Error lists before it counts the
// rest: a hostile file can hold hundreds of thousands, and nobody reads
// past the first few.
const MaxShown = 20

func (es Errors) Error() string {
	n := min(len(es), MaxShown)
	lines := make([]string, n, n+1)
	for i, e := range es[:n] {
		lines[i] = e.Error()
	}
	if rest := len(es) - n; rest > 0 {
		lines = append(lines, fmt.Sprintf("... and %d more problems", rest))
	}
	return strings.Join(lines, "\n")
}

// Err returns es as an error, or nil when it is empty.
func (es Errors) Err() error {
	if len(es) == 0 {
		return nil
	}
	return es
}

// Decode parses data strictly into v: unknown fields and duplicate keys are
// errors. The data is held to DefaultLimits first. The error, if any, is an
// *Error naming file:line:col.
func Decode(file string, data []byte, v any) error {
	d, err := Parse(file, data)
	if err != nil {
		return err
	}
	return d.Decode(v)
}

// Decode decodes the document's first YAML document strictly into v, as
// the package function Decode does, without parsing the file again.
func (d *Doc) Decode(v any) (err error) {
	// The YAML library panics on some malformed input (e.g. `a: ! {0}`);
	// user input must get an error, never a crash.
	defer func() {
		if r := recover(); r != nil {
			err = &Error{File: d.File, Msg: fmt.Sprintf("malformed YAML: %v", r)}
		}
	}()
	if len(d.file.Docs) == 0 || d.file.Docs[0] == nil || d.file.Docs[0].Body == nil {
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(nil), yaml.DisallowUnknownField())
	if err := dec.DecodeFromNode(d.file.Docs[0].Body, v); err != nil {
		return wrap(d.File, err)
	}
	return nil
}

func wrap(file string, err error) *Error {
	var own *Error // from a value's own decoder, e.g. Duration
	if errors.As(err, &own) {
		e := *own
		e.File = file
		return &e
	}
	var ye yaml.Error
	if errors.As(err, &ye) {
		e := &Error{File: file, Msg: friendly(ye.GetMessage())}
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			e.Line, e.Col = tk.Position.Line, tk.Position.Column
		}
		return e
	}
	return &Error{File: file, Msg: friendly(err.Error())}
}

// Doc is a parsed YAML file kept for locating semantic errors (an unknown
// query id, a bad expectation) after decoding.
type Doc struct {
	File string
	file *ast.File
}

// Parse parses data for position look-ups and decoding, within
// DefaultLimits. A syntax error or a crossed limit is returned as an *Error.
func Parse(file string, data []byte) (*Doc, error) {
	return ParseLimited(file, data, DefaultLimits())
}

// ParseLimited is Parse within lim: the bytes are checked before the YAML
// library sees them, and aliases before anything expands them.
func ParseLimited(file string, data []byte, lim Limits) (d *Doc, err error) {
	if err := Check(file, data, lim); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			d, err = nil, &Error{File: file, Msg: fmt.Sprintf("malformed YAML: %v", r)}
		}
	}()
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, wrap(file, err)
	}
	if e := expansion(file, f, lim); e != nil {
		return nil, e
	}
	return &Doc{File: file, file: f}, nil
}

// AST is the parsed file, for readers that walk it themselves.
func (d *Doc) AST() *ast.File { return d.file }

// Errorf returns an *Error positioned at the node at path (YAML path syntax,
// e.g. "$.steps[2].query"). When the path is not found, the error carries the
// file name only.
func (d *Doc) Errorf(path, fix, format string, args ...any) *Error {
	e := &Error{File: d.File, Msg: fmt.Sprintf(format, args...), Fix: fix}
	e.Line, e.Col = d.Pos(path)
	return e
}

// Pos returns the line and column of the node at path, or 0, 0.
func (d *Doc) Pos(path string) (line, col int) {
	if d == nil || d.file == nil {
		return 0, 0
	}
	p, err := yaml.PathString(path)
	if err != nil {
		return 0, 0
	}
	n, err := p.FilterFile(d.file)
	if err != nil || n == nil {
		return 0, 0
	}
	tk := n.GetToken()
	if tk == nil || tk.Position == nil {
		return 0, 0
	}
	return tk.Position.Line, tk.Position.Column
}
