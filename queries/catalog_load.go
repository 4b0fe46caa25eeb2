package queries

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/template"
	"time"

	"github.com/prometheus/common/model"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/yamlfile"
)

//go:embed catalog/*.yaml
var builtin embed.FS

// fileDoc is the schema of a catalogue file, built-in or the user's.
type fileDoc struct {
	Packs   []*packDoc  `yaml:"packs"`
	Queries []*queryDoc `yaml:"queries"`
}

type packDoc struct {
	Name        string            `yaml:"name"`
	Title       string            `yaml:"title"`
	Description string            `yaml:"description"`
	Labels      map[string]string `yaml:"labels"`
	Match       map[string]string `yaml:"match"`
	Extends     string            `yaml:"extends"`
	Unsupported string            `yaml:"unsupported"`
}

type queryDoc struct {
	ID        string                   `yaml:"id"`
	Title     string                   `yaml:"title"`
	Meaning   string                   `yaml:"meaning"`
	Action    string                   `yaml:"action"`
	Unit      string                   `yaml:"unit"`
	Params    []string                 `yaml:"params"`
	Window    string                   `yaml:"window"`
	Threshold *thresholdDoc            `yaml:"threshold"`
	Packs     map[string]*packQueryDoc `yaml:"packs"`
}

type thresholdDoc struct {
	Warn      *float64 `yaml:"warn"`
	Crit      *float64 `yaml:"crit"`
	Direction string   `yaml:"direction"`
	For       string   `yaml:"for"`
}

type packQueryDoc struct {
	Expr        string   `yaml:"expr"`
	Metrics     []string `yaml:"metrics"`
	Bound       string   `yaml:"bound"`
	Note        string   `yaml:"note"`
	Unsupported string   `yaml:"unsupported"`
}

// origin is where a definition came from, for positioned errors.
type origin struct {
	doc  *yamlfile.Doc
	path string
}

func (o origin) errorf(sub, fix, format string, args ...any) *yamlfile.Error {
	p := o.path + sub
	e := o.doc.Errorf(p, fix, format, args...)
	// A path to a missing key has no position; its nearest ancestor does.
	for e.Line == 0 && strings.ContainsAny(p, ".[") {
		p = p[:strings.LastIndexAny(p, ".[")]
		e.Line, e.Col = o.doc.Pos(p)
	}
	if e.Line == 0 {
		e.Line, e.Col = 1, 1
	}
	return e
}

var (
	idRE       = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	packNameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)
)

type source struct {
	name string
	data []byte
}

// Load returns the built-in catalogue extended by every *.yaml (and *.yml)
// file in dirs. A user query with a built-in's id (or an earlier file's)
// amends it: the fields it sets replace the old ones (threshold as a whole),
// and its packs are merged by name, so a file can add a pack to a built-in,
// change one pack's PromQL or just the threshold. A user pack with an
// existing name likewise amends it (labels merged). All problems in all
// files are reported together as yamlfile.Errors, each with file:line:col,
// wrapped as a usage error (exit 2).
func Load(dirs ...string) (*Catalog, error) {
	srcs, err := builtinSources()
	if err != nil {
		return nil, err
	}
	var errs yamlfile.Errors
	for _, dir := range dirs {
		s, err := dirSources(dir)
		if err != nil {
			errs = append(errs, &yamlfile.Error{File: dir, Msg: err.Error()})
			continue
		}
		srcs = append(srcs, s...)
	}
	c, lerrs := load(srcs)
	if errs = append(errs, lerrs...); len(errs) > 0 {
		return nil, exit.NewUsage(errs)
	}
	return c, nil
}

func builtinSources() ([]source, error) {
	names, err := fs.Glob(builtin, "catalog/*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	srcs := make([]source, 0, len(names))
	for _, n := range names {
		data, err := builtin.ReadFile(n)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, source{name: "builtin:" + path.Base(n), data: data})
	}
	return srcs, nil
}

func dirSources(dir string) ([]source, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read queries directory: %w", err)
	}
	var srcs []source
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if e.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		data, err := yamlfile.ReadFile(p, yamlfile.DefaultLimits())
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, source{name: p, data: data})
	}
	return srcs, nil
}

type loadedFile struct {
	doc *yamlfile.Doc
	fd  fileDoc
}

func load(srcs []source) (*Catalog, yamlfile.Errors) {
	c := &Catalog{byID: map[string]*Query{}, byName: map[string]*Pack{}}
	var errs yamlfile.Errors
	var files []loadedFile
	for _, s := range srcs {
		doc, err := yamlfile.Parse(s.name, s.data)
		if err == nil {
			var fd fileDoc
			if err = yamlfile.Decode(s.name, s.data, &fd); err == nil {
				files = append(files, loadedFile{doc, fd})
				continue
			}
		}
		errs = append(errs, asYAMLError(s.name, err))
	}
	// Packs first, so a query may name a pack defined in a later file.
	for _, f := range files {
		for i, pd := range f.fd.Packs {
			errs = append(errs, c.addPack(pd, origin{f.doc, fmt.Sprintf("$.packs[%d]", i)})...)
		}
	}
	for _, f := range files {
		for i, qd := range f.fd.Queries {
			errs = append(errs, c.addQuery(qd, origin{f.doc, fmt.Sprintf("$.queries[%d]", i)})...)
		}
	}
	for _, q := range c.queries {
		errs = append(errs, c.check(q)...)
	}
	return c, errs
}

func asYAMLError(file string, err error) *yamlfile.Error {
	var ye *yamlfile.Error
	if errors.As(err, &ye) {
		if ye.Line == 0 {
			ye.Line, ye.Col = 1, 1
		}
		return ye
	}
	return &yamlfile.Error{File: file, Line: 1, Col: 1, Msg: err.Error()}
}

func (c *Catalog) addPack(pd *packDoc, o origin) yamlfile.Errors {
	if pd == nil {
		return yamlfile.Errors{o.errorf("", "", "empty pack entry")}
	}
	if !packNameRE.MatchString(pd.Name) {
		return yamlfile.Errors{o.errorf(".name", "use lower-case letters, digits, - and _", "invalid pack name %q", pd.Name)}
	}
	var errs yamlfile.Errors
	for name, label := range pd.Labels {
		if !labelNameRE.MatchString(name) {
			errs = append(errs, o.errorf(".labels."+name, "labels maps service, dependency, pool or a label name to a label name", "%q is neither a param nor a label name", name))
		} else if !labelNameRE.MatchString(label) {
			errs = append(errs, o.errorf(".labels."+name, "", "%q is not a Prometheus label name", label))
		}
	}
	for param, conv := range pd.Match {
		if !isLabelParam(param) {
			errs = append(errs, o.errorf(".match."+param, "match is for service, dependency and pool", "unknown param %q", param))
		} else if !contains(MatchConventions, conv) {
			errs = append(errs, o.errorf(".match."+param, "use one of "+strings.Join(MatchConventions, ", "), "unknown naming convention %q", conv))
		}
	}
	if pd.Extends != "" {
		if base, ok := c.byName[pd.Extends]; !ok || base.Extends != "" || pd.Extends == pd.Name {
			errs = append(errs, o.errorf(".extends", "name a pack defined earlier that extends no other", "cannot extend %q", pd.Extends))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	p := c.byName[pd.Name]
	if p == nil {
		p = &Pack{Name: pd.Name, Labels: map[string]string{}, Match: map[string]string{}}
		c.byName[p.Name] = p
		c.packs = append(c.packs, p)
	}
	p.Title = firstSet(pd.Title, p.Title)
	p.Description = firstSet(pd.Description, p.Description)
	p.otherwise = firstSet(pd.Unsupported, p.otherwise)
	p.Extends = firstSet(pd.Extends, p.Extends)
	for k, v := range pd.Labels {
		p.Labels[k] = v
	}
	for k, v := range pd.Match {
		p.Match[k] = v
	}
	return nil
}

func (c *Catalog) addQuery(qd *queryDoc, o origin) yamlfile.Errors {
	if qd == nil {
		return yamlfile.Errors{o.errorf("", "", "empty query entry")}
	}
	if !idRE.MatchString(qd.ID) {
		return yamlfile.Errors{o.errorf(".id", "use lower-case letters, digits and _", "invalid query id %q", qd.ID)}
	}
	q := c.byID[qd.ID]
	if q == nil {
		q = &Query{ID: qd.ID, Packs: map[string]*PackQuery{}, src: o}
	}
	var errs yamlfile.Errors
	q.Title = firstSet(qd.Title, q.Title)
	q.Meaning = firstSet(qd.Meaning, q.Meaning)
	q.Action = firstSet(qd.Action, q.Action)
	if qd.Unit != "" {
		if !contains(Units, qd.Unit) {
			errs = append(errs, o.errorf(".unit", "use one of "+strings.Join(Units, ", "), "unknown unit %q", qd.Unit))
		}
		q.Unit = qd.Unit
	}
	if qd.Params != nil {
		q.Params = qd.Params
		for i, p := range qd.Params {
			if !isLabelParam(p) && p != ParamWindow || contains(qd.Params[:i], p) {
				errs = append(errs, o.errorf(fmt.Sprintf(".params[%d]", i), "params are service, dependency, pool and window, each once", "unknown or repeated param %q", p))
			}
		}
	}
	if qd.Window != "" {
		d, err := model.ParseDuration(qd.Window)
		if err != nil || time.Duration(d) < MinWindow {
			errs = append(errs, o.errorf(".window", "use a Prometheus duration such as 1m or 5m", "invalid window %q", qd.Window))
		}
		q.Window = time.Duration(d)
	}
	if qd.Threshold != nil {
		t, err := qd.Threshold.threshold()
		if err != nil {
			errs = append(errs, o.errorf(".threshold", "", "bad threshold: %v", err))
		}
		q.Threshold = t
	}
	for _, name := range sortedKeys(qd.Packs) {
		pq, perrs := c.packQuery(qd.Packs[name], origin{o.doc, o.path + ".packs." + name}, name)
		errs = append(errs, perrs...)
		if pq != nil {
			q.Packs[name] = pq
		}
	}
	if _, ok := c.byID[q.ID]; !ok {
		c.byID[q.ID] = q
		c.queries = append(c.queries, q)
	}
	return errs
}

func (td *thresholdDoc) threshold() (Threshold, error) {
	t := Threshold{Warn: td.Warn, Crit: td.Crit, Direction: Direction(td.Direction)}
	if td.For != "" {
		d, err := model.ParseDuration(td.For)
		if err != nil {
			return t, fmt.Errorf("for: %w", err)
		}
		t.For = time.Duration(d)
	}
	return t, t.validate()
}

func (c *Catalog) packQuery(pd *packQueryDoc, o origin, pack string) (*PackQuery, yamlfile.Errors) {
	if _, ok := c.byName[pack]; !ok {
		return nil, yamlfile.Errors{o.errorf("", "known packs: "+strings.Join(c.packNames(), ", ")+"; define new ones under packs:", "unknown pack %q", pack)}
	}
	if pd == nil || (pd.Expr == "") == (pd.Unsupported == "") {
		return nil, yamlfile.Errors{o.errorf("", "", "give either expr (the PromQL template) or unsupported (why this pack cannot answer)")}
	}
	if pd.Bound != "" && pd.Bound != "lower" && pd.Bound != "upper" {
		return nil, yamlfile.Errors{o.errorf(".bound", "", "bound must be lower or upper, not %q", pd.Bound)}
	}
	pq := &PackQuery{Expr: pd.Expr, Metrics: pd.Metrics, Bound: pd.Bound, Note: pd.Note, Unsupported: pd.Unsupported, src: o}
	if pd.Expr != "" {
		t, err := template.New(pack).Funcs(placeholderFuncs).Option("missingkey=error").Parse(pd.Expr)
		if err != nil {
			return nil, yamlfile.Errors{o.errorf(".expr", templateHelp, "template does not parse: %v", err)}
		}
		if err := plainActions(t); err != nil {
			return nil, yamlfile.Errors{o.errorf(".expr", templateHelp, "%v", err)}
		}
		pq.tmpl = t
	}
	return pq, nil
}

// check validates a query once every file has been merged into it.
func (c *Catalog) check(q *Query) yamlfile.Errors {
	var errs yamlfile.Errors
	if q.Title == "" || q.Unit == "" || q.Threshold.Direction == "" {
		errs = append(errs, q.src.errorf("", "a new query needs title, unit, params and threshold", "query %s is incomplete", q.ID))
	}
	if q.declares(ParamWindow) && q.Window == 0 {
		errs = append(errs, q.src.errorf(".params", "add window: with the default, e.g. 1m", "query %s takes a window but has no default", q.ID))
	}
	for _, name := range c.packNames() {
		pq := q.packQuery(c.byName[name])
		if pq == nil || pq.Unsupported != "" {
			continue
		}
		if err := pq.check(q, c.byName[name]); err != nil {
			errs = append(errs, err)
		} else {
			q.answers = append(q.answers, name)
		}
	}
	if len(q.answers) == 0 && len(errs) == 0 {
		errs = append(errs, q.src.errorf(".packs", "add a pack with an expr", "no pack answers query %s", q.ID))
	}
	return errs
}

func firstSet(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
