package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/stormctl/stormctl/internal/yamlfile"
)

// The script commands here read a field of what the last command printed,
// so that a script can check a JSON shape exactly and hand a value (an
// action id, a request id) to a later command.
//
// A PATH is object keys and array indexes joined by dots: targets.0.after.value.
// A negative index counts from the end (-1 is the last element); "." alone
// is the whole document. The stdout is read as one JSON document, or with
// -lines as JSON Lines (an array of one value per line), or with -yaml as
// YAML. A value is compared and captured as text: a string as itself,
// anything else as its compact JSON (null, true, 4, {"a":1} with sorted keys).

// docFlags are the options `field` and `capture` share.
type docFlags struct {
	format string // "", "-lines" or "-yaml"
	len    bool   // -len: the length of the array or object at PATH
	omit   string // -omit KEY: KEY removed from every object at PATH
}

// parseDocFlags takes the leading options off args.
func parseDocFlags(ts *testscript.TestScript, args []string, allowed ...string) (docFlags, []string) {
	var f docFlags
	// A PATH may start with "-" (a negative index), so only the known
	// option names are options.
	for len(args) > 0 && slices.Contains([]string{"-lines", "-yaml", "-len", "-omit"}, args[0]) {
		opt := args[0]
		if !slices.Contains(allowed, opt) {
			ts.Fatalf("option %s does not apply here (have %s)", opt, strings.Join(allowed, " "))
		}
		switch opt {
		case "-lines", "-yaml":
			f.format = opt
		case "-len":
			f.len = true
		case "-omit":
			if len(args) < 2 {
				ts.Fatalf("-omit needs a KEY")
			}
			f.omit, args = args[1], args[1:]
		}
		args = args[1:]
	}
	return f, args
}

// maxDoc bounds the stdout a script reads as a document: far above any
// command's output in these scripts, far below what would slow a run.
const maxDoc = 4 << 20

// stdoutValue decodes the last command's stdout and returns the value at path.
func stdoutValue(ts *testscript.TestScript, f docFlags, path string) any {
	out := ts.ReadFile("stdout")
	if len(out) > maxDoc {
		ts.Fatalf("stdout is %d bytes, more than the %d a script reads as a document", len(out), maxDoc)
	}
	lim := yamlfile.DefaultLimits()
	var doc any
	switch f.format {
	case "-lines":
		lines := []any{}
		ll := yamlfile.LineLimits{MaxBytes: maxDoc, MaxLine: maxDoc, MaxLines: maxDoc, Doc: lim}
		for l, err := range yamlfile.Lines(strings.NewReader(out), "stdout", ll) {
			var v any
			if err == nil {
				err = yamlfile.DecodeLine("stdout", l, &v)
			}
			if err != nil {
				ts.Fatalf("stdout is not JSON Lines: %v", err)
			}
			lines = append(lines, v)
		}
		doc = lines
	case "-yaml":
		if err := yamlfile.Decode("stdout", []byte(out), &doc); err != nil {
			ts.Fatalf("stdout is not YAML: %v", err)
		}
	default:
		if err := yamlfile.DecodeJSON("stdout", []byte(out), &doc, lim); err != nil {
			ts.Fatalf("stdout is not one JSON document: %v", err)
		}
	}
	v, err := lookup(doc, path)
	if err != nil {
		ts.Fatalf("%s in stdout: %v", path, err)
	}
	if f.omit != "" {
		v = omitKey(v, f.omit)
	}
	if f.len {
		switch x := v.(type) {
		case []any:
			return len(x)
		case map[string]any:
			return len(x)
		case nil: // as len() of a nil slice: an omitted list is empty
			return 0
		default:
			ts.Fatalf("-len %s: not an array or object: %s", path, valueText(v))
		}
	}
	return v
}

// lookup follows path through v.
func lookup(v any, path string) (any, error) {
	if path == "." {
		return v, nil
	}
	var done []string
	// at names where the lookup is, for the errors.
	at := func() string {
		if len(done) == 0 {
			return "the document"
		}
		return strconv.Quote(strings.Join(done, "."))
	}
	for seg := range strings.SplitSeq(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[seg]; !ok {
				return nil, fmt.Errorf("no key %q in the object at %s", seg, at())
			}
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil {
				return nil, fmt.Errorf("%q is not an index into the array at %s", seg, at())
			}
			if i < 0 {
				i += len(x)
			}
			if i < 0 || i >= len(x) {
				return nil, fmt.Errorf("index %s is out of the array at %s, of length %d", seg, at(), len(x))
			}
			v = x[i]
		default:
			return nil, fmt.Errorf("no %q: the value at %s is %s, not an object or array", seg, at(), valueText(v))
		}
		done = append(done, seg)
	}
	return v, nil
}

// omitKey returns v without key in any object, at any depth.
func omitKey(v any, key string) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			if k != key {
				m[k] = omitKey(e, key)
			}
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = omitKey(e, key)
		}
		return s
	}
	return v
}

// valueText is v as a script compares and captures it.
func valueText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%v", v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// cmdField checks a field of the last command's JSON stdout:
// `field [-lines|-yaml] [-len] [-omit KEY] PATH WANT` passes when the value
// at PATH (its length with -len, without KEY in any object with -omit) is
// WANT as text; `! field` when it is present and is not.
func cmdField(ts *testscript.TestScript, neg bool, args []string) {
	f, args := parseDocFlags(ts, args, "-lines", "-yaml", "-len", "-omit")
	if len(args) != 2 {
		ts.Fatalf("usage: field [-lines|-yaml] [-len] [-omit KEY] PATH WANT")
	}
	got := valueText(stdoutValue(ts, f, args[0]))
	if (got == args[1]) == neg {
		if neg {
			ts.Fatalf("%s is %q, want anything else", args[0], got)
		}
		ts.Fatalf("%s is %q, want %q", args[0], got, args[1])
	}
}

// cmdCapture sets an environment variable to a field of the last
// command's JSON stdout: `capture [-lines|-yaml] NAME PATH`, so later
// lines can use $NAME (or ${NAME@R} in a regexp). A missing, null or
// empty value fails the script: a captured id must be there.
func cmdCapture(ts *testscript.TestScript, neg bool, args []string) {
	f, args := parseDocFlags(ts, args, "-lines", "-yaml")
	if neg || len(args) != 2 {
		ts.Fatalf("usage: capture [-lines|-yaml] NAME PATH")
	}
	v := stdoutValue(ts, f, args[1])
	if v == nil || v == "" {
		ts.Fatalf("capture %s: %s in stdout is %s", args[0], args[1], strconv.Quote(valueText(v)))
	}
	ts.Setenv(args[0], valueText(v))
}
