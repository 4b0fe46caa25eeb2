package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/internal/yamlfile"
)

// The formats a file may be in.
const (
	FormatCallPath     = "callpath"
	FormatEnvoy        = "envoy"
	FormatIstio        = "istio"
	FormatResilience4j = "resilience4j"
	FormatGRPC         = "grpc"
)

// maxHops bounds a path: hostile input must not make the arithmetic
// overflow or the walk run away.
const maxHops = 64

// Formats lists the importers, for --format.
var Formats = []string{FormatCallPath, FormatEnvoy, FormatIstio, FormatResilience4j, FormatGRPC}

// Input is one file of a path: its name (with an optional #selector that
// picks one policy when the file holds several) and its content.
type Input struct {
	Name string
	Data []byte
}

// ReadFiles reads each FILE or FILE#selector.
func ReadFiles(args []string) ([]Input, error) {
	var out []Input
	for _, a := range args {
		file := a
		if _, err := os.Stat(a); err != nil {
			if i := strings.LastIndexByte(a, '#'); i > 0 {
				file = a[:i]
			}
		}
		data, err := yamlfile.ReadFile(file, yamlfile.DefaultLimits())
		if err != nil {
			if yamlfile.IsLimit(err) {
				return nil, err
			}
			return nil, fmt.Errorf("policy: %w", err)
		}
		out = append(out, Input{Name: a, Data: data})
	}
	return out, nil
}

// LoadOptions configure Load.
type LoadOptions struct {
	// Format forces the importer of every file that is not a CallPath;
	// empty detects it from the content.
	Format string
}

type loaded struct {
	in       Input
	file     string
	selector string
	d        *doc
	format   string
	taken    []*Hop
}

// Load reads the files of one call path, outermost first, into a Path.
// Every problem is reported as file:line:col; the error is a
// yamlfile.Errors.
func Load(inputs []Input, opts LoadOptions) (*Path, error) {
	if opts.Format != "" && !slices.Contains(Formats, opts.Format) {
		return nil, fmt.Errorf("unknown format %q (want one of %s)", clean(opts.Format), strings.Join(Formats, ", "))
	}
	p := &Path{}
	var errs yamlfile.Errors
	var files []*loaded
	for _, in := range inputs {
		l := &loaded{in: in, file: in.Name}
		if _, err := os.Stat(in.Name); err != nil {
			if i := strings.LastIndexByte(in.Name, '#'); i > 0 {
				l.file, l.selector = in.Name[:i], in.Name[i+1:]
			}
		}
		p.Files = append(p.Files, clean(l.file))
		d, perrs := parseDoc(l.file, in.Data, true)
		if perrs != nil {
			errs = append(errs, perrs...)
			continue
		}
		l.d = d
		if len(d.docs) == 0 {
			errs = append(errs, &yamlfile.Error{File: clean(l.file), Msg: "empty file", Fix: "give a CallPath or an Envoy, Istio, resilience4j or gRPC config"})
			continue
		}
		l.format = detect(d, opts.Format)
		if l.format == "" {
			errs = append(errs, &yamlfile.Error{File: clean(l.file), Msg: "not a CallPath, Envoy route or cluster config, Istio VirtualService, resilience4j application.yml or gRPC service config",
				Fix: "give --format " + strings.Join(Formats[1:], "|") + " if the content is one of them"})
			continue
		}
		files = append(files, l)
	}
	// CallPaths first: they name the dependency the imports are matched to.
	for _, l := range files {
		if l.format == FormatCallPath {
			l.d.loose = false
			before := len(p.Hops)
			callPath(l.d, p)
			if p.Name == "" {
				p.Name = strings.TrimSuffix(filepath.Base(l.file), filepath.Ext(l.file))
			}
			l.hops(p.Hops[before:])
		}
	}
	var hops []*Hop
	clusters := map[string]*envoyCluster{}
	var envoyHops []candidate
	for _, l := range files {
		if l.format == FormatCallPath {
			hops = append(hops, l.taken...)
			errs = append(errs, sorted(l.d.errs)...)
			continue
		}
		var cands []candidate
		switch l.format {
		case FormatEnvoy:
			var cs map[string]*envoyCluster
			cands, cs = envoy(l.d)
			for k, v := range cs {
				clusters[k] = v
			}
		case FormatIstio:
			cands = istio(l.d)
		case FormatResilience4j:
			cands = resilience4j(l.d)
		case FormatGRPC:
			cands = grpcConfig(l.d)
		}
		errs = append(errs, sorted(l.d.errs)...)
		if len(cands) == 0 {
			if l.format != FormatEnvoy || l.selector != "" {
				errs = append(errs, &yamlfile.Error{File: clean(l.file), Msg: "no retry policy found in this " + l.format + " file"})
			}
			continue
		}
		c, err := choose(l, cands, p.Dependency.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if l.format == FormatEnvoy {
			envoyHops = append(envoyHops, c)
		}
		hops = append(hops, c.hop)
	}
	for _, c := range envoyHops {
		cl := clusters[c.cluster]
		if cl == nil {
			c.hop.Retry.Budget = concurrencyBudget(envoyMaxRetries)
			c.hop.Notes = append(c.hop.Notes, "cluster "+c.cluster+" not given: Envoy's default circuit breaker max_retries 3 applies")
			continue
		}
		c.hop.Retry.Budget, c.hop.Breaker = cl.budget, cl.breaker
		c.hop.Notes = append(c.hop.Notes, cl.notes...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	p.Hops = hops
	if len(p.Hops) > maxHops {
		return nil, yamlfile.Errors{{File: strings.Join(p.Files, ", "), Msg: fmt.Sprintf("the path has %d hops; at most %d", len(p.Hops), maxHops)}}
	}
	if len(p.Hops) == 0 {
		return nil, yamlfile.Errors{{File: strings.Join(p.Files, ", "), Msg: "the path has no hops", Fix: "list hops: in a CallPath or add an Envoy, Istio, resilience4j or gRPC file"}}
	}
	if p.Name == "" {
		p.Name = strings.TrimSuffix(filepath.Base(p.Files[0]), filepath.Ext(p.Files[0]))
	}
	if p.Dependency.Name == "" {
		p.Dependency.Name = "dependency"
	}
	p.Name, p.Dependency.Name = clean(p.Name), clean(p.Dependency.Name)
	return p, nil
}

// hops records the hops a CallPath contributed, in file order.
func (l *loaded) hops(h []*Hop) { l.taken = append(l.taken, h...) }

func detect(d *doc, forced string) string {
	root := d.docs[0]
	if root.get("kind").str("kind") == "CallPath" {
		return FormatCallPath
	}
	if forced != "" {
		return forced
	}
	switch {
	case isIstio(root):
		return FormatIstio
	case isEnvoy(root):
		return FormatEnvoy
	case isGRPC(root):
		return FormatGRPC
	}
	for _, r := range d.docs {
		if isSpring(r) {
			return FormatResilience4j
		}
	}
	return ""
}

// choose picks the policy a file contributes: the one its #selector names,
// else the one matching the dependency, else the only one.
func choose(l *loaded, cands []candidate, dependency string) (candidate, *yamlfile.Error) {
	var names []string
	for _, c := range cands {
		names = append(names, c.name)
	}
	pick := func(key string) []candidate {
		var out []candidate
		for _, c := range cands {
			for _, k := range c.keys {
				if k != "" && (k == key || norm(k) == norm(key)) {
					out = append(out, c)
					break
				}
			}
		}
		return out
	}
	var got []candidate
	switch {
	case l.selector != "":
		if got = pick(l.selector); len(got) == 0 {
			return candidate{}, &yamlfile.Error{File: clean(l.file), Msg: fmt.Sprintf("no policy %q in this %s file", clean(l.selector), l.format),
				Fix: "one of " + strings.Join(names, ", ")}
		}
	case len(cands) == 1:
		got = cands
	case dependency != "":
		for _, c := range cands {
			if calls(c.target, dependency) {
				got = append(got, c)
			}
		}
	}
	if len(got) == 1 {
		return got[0], nil
	}
	if len(got) == 0 {
		got = cands
	}
	var amb []string
	for _, c := range got {
		amb = append(amb, c.name)
	}
	return candidate{}, &yamlfile.Error{File: clean(l.file), Msg: fmt.Sprintf("%d retry policies in this %s file", len(got), l.format),
		Fix: "pick one with " + clean(l.file) + "#NAME, NAME one of " + strings.Join(amb, ", ")}
}

// sorted orders one file's problems by position.
func sorted(errs yamlfile.Errors) yamlfile.Errors {
	slices.SortStableFunc(errs, func(a, b *yamlfile.Error) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Col - b.Col
	})
	return errs
}

// calls reports whether a policy's target (a cluster, a host such as
// inventory.shop.svc.cluster.local, a gRPC service such as
// inventory.v1.Inventory, an instance) is the dependency.
func calls(target, dependency string) bool {
	t, d := strings.ToLower(target), strings.ToLower(dependency)
	return t != "" && (norm(t) == norm(d) || strings.HasPrefix(t, d+"."))
}
