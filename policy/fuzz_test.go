package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stormctl/stormctl/internal/yamlfile"
)

// FuzzLoad feeds arbitrary bytes to every loader: each must return a path
// or errors naming the file, with a line:col inside it where one is known,
// never panic, and a path must analyse and encode.
func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob("testdata/i*/*") // import/ and incidents/
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(0), data)
	}
	for _, s := range []string{
		"", "{}", "[", "kind: CallPath\nhops: [{service: a, retry: {attempts: 100, on: [5xx]}}]\n",
		"kind: CallPath\nhops:\n" + repeat("  - {service: s, pool: {size: 1}, timeout: 1ms, retry: {attempts: 100, on: [timeout, 5xx], backoff: exponential, base: 1ms}}\n", 20),
		"a: &a [*a, *a]\nresilience4j.retry.instances.x.maxAttempts: *a\n",
		"virtual_hosts: [{routes: [{route: {retry_policy: {num_retries: 99999999999}}}]}]",
		`{"methodConfig": [{"retryPolicy": {"maxAttempts": "7", "retryableStatusCodes": [14, "x"]}}], "retryThrottling": {}}`,
		"apiVersion: networking.istio.io/v1\nkind: List\nitems: [{kind: VirtualService, apiVersion: networking.istio.io/v1, spec: {http: [{retries: {retryOn: 'x,,5'}}]}}]",
	} {
		f.Add(uint8(0), []byte(s))
	}
	f.Fuzz(func(t *testing.T, format uint8, data []byte) {
		opts := LoadOptions{}
		if i := int(format) % (len(Formats) + 1); i > 0 {
			opts.Format = Formats[i-1]
		}
		p, err := Load([]Input{{Name: "fuzz.yaml", Data: data}}, opts)
		if (p == nil) == (err == nil) {
			t.Fatalf("want a path or an error, got %v and %v", p, err)
		}
		if err != nil {
			var es yamlfile.Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("want yamlfile.Errors, got %T %v", err, err)
			}
			// YAML breaks lines at \n, \r\n and a lone \r.
			lines := bytes.Count(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")), []byte("\n")) + bytes.Count(data, []byte("\r")) - bytes.Count(data, []byte("\r\n")) + 1
			for _, e := range es {
				if e.Msg == "" || e.File != "fuzz.yaml" {
					t.Fatalf("error without a message or the file: %+v", e)
				}
				// file:line:col points into the file, or names only the file.
				if e.Line < 0 || e.Line > lines || (e.Line > 0) != (e.Col > 0) {
					t.Fatalf("position %d:%d outside the %d lines of the input: %v", e.Line, e.Col, lines, e)
				}
			}
			return
		}
		if _, err := json.Marshal(Analyze(p)); err != nil {
			t.Fatalf("analysis does not encode: %v", err)
		}
	})
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}
