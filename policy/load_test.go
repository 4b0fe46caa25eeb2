package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/yamlfile"
)

const callPathHead = "apiVersion: stormctl/v1\nkind: CallPath\nname: p\nrate: 400/s\n"

// TestLoadErrors: malformed input names file:line:col and, where one is
// known, the fix.
func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"typo.yaml", callPathHead + "hops:\n  - service: checkout\n    retyr: {attempts: 2}\n",
			`typo.yaml:7:5: unknown field "retyr" in a hop (did you mean retry?)`},
		{"duration.yaml", callPathHead + "hops:\n  - service: checkout\n    timeout: 200\n",
			`duration.yaml:7:14: timeout "200" (a duration such as 200ms, 1.5s or 2m)`},
		{"class.yaml", callPathHead + "hops:\n  - service: c\n    retry: {attempts: 2, on: [timeout, 418]}\n",
			`class.yaml:7:30: unknown failure class "418"`},
		{"noon.yaml", callPathHead + "hops:\n  - service: c\n    retry: {attempts: 3}\n",
			`noon.yaml:7:13: retry has no on: list`},
		{"rate.yaml", "apiVersion: stormctl/v1\nkind: CallPath\nrate: fast\nhops: [{service: a}]\n",
			`rate.yaml:3:7: rate "fast"`},
		{"version.yaml", "apiVersion: stormctl/v2\nkind: CallPath\nhops: [{service: a}]\n",
			`version.yaml:1:13: apiVersion must be stormctl/v1`},
		{"syntax.yaml", "apiVersion: stormctl/v1\nkind: CallPath\nhops: [\n", "syntax.yaml:3:"},
		{"envoy.yaml", "virtual_hosts:\n- name: v\n  routes:\n  - match: {prefix: /}\n    route:\n      cluster: c\n      retry_policy:\n        retry_on: 5xx\n        per_try_timeout: 200ms\n",
			`envoy.yaml:9:26: per_try_timeout "200ms" (protobuf durations are seconds with an s suffix, e.g. 0.25s)`},
		{"envoy-on.yaml", "virtual_hosts:\n- name: v\n  routes:\n  - match: {prefix: /}\n    route:\n      cluster: c\n      retry_policy: {retry_on: '5xx,sometimes'}\n",
			`envoy-on.yaml:7:32: unknown retry_on condition "sometimes"`},
		{"grpc.json", `{"methodConfig": [{"name": [{"service": "s"}], "retryPolicy": {"maxAttempts": 1, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}`,
			`grpc.json:1:79: maxAttempts: want a whole number in [2, 2147483647], got "1"`},
		{"grpc-missing.json", "{\"methodConfig\": [{\"name\": [{\"service\": \"s\"}],\n  \"retryPolicy\": {\"maxAttempts\": 3, \"maxBackoff\": \"1s\", \"backoffMultiplier\": 2, \"retryableStatusCodes\": [\"NOPE\"]}}]}",
			`grpc-missing.json:2:19: retryPolicy.initialBackoff is required`},
		{"application.yml", "resilience4j:\n  retry:\n    instances:\n      inventory:\n        waitDuration: soon\n",
			`application.yml:5:23: waitDuration "soon"`},
		{"vs.yaml", "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: v}\nspec:\n  http:\n  - retries: {attempts: -1}\n",
			`vs.yaml:6:25: attempts: want a whole number in [0, 1000], got "-1"`},
		{"empty.yaml", "", "empty.yaml: empty file"},
		{"other.yaml", "kind: Deployment\nspec: {}\n", "other.yaml: not a CallPath"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load([]Input{{Name: tc.name, Data: []byte(tc.data)}}, LoadOptions{})
			var es yamlfile.Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("want positioned errors, got %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got:\n%v\nwant it to contain:\n%s", err, tc.want)
			}
		})
	}
}

// TestChoose: a file with several policies needs FILE#NAME unless the
// dependency names one; an unknown name lists the choices.
func TestChoose(t *testing.T) {
	in, err := ReadFiles([]string{"testdata/import/envoy-routes.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Load(in, LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "envoy-routes.yaml#NAME, NAME one of inventory/stock, inventory/catalogue") {
		t.Errorf("ambiguous: %v", err)
	}
	in[0].Name += "#nope"
	if _, err = Load(in, LoadOptions{}); err == nil || !strings.Contains(err.Error(), `no policy "nope"`) {
		t.Errorf("unknown selector: %v", err)
	}
	p := load(t, "testdata/incidents/shared-pool.yaml", "testdata/import/envoy-routes.yaml")
	if p.Hops[2].Service != "envoy:inventory->inventory" {
		t.Errorf("chosen by the dependency: %s", p.Hops[2].Service)
	}
	if _, err := Load(in, LoadOptions{Format: "nginx"}); err == nil {
		t.Error("unknown --format accepted")
	}
	// --format overrides detection for every file but a CallPath.
	in, _ = ReadFiles([]string{"testdata/incidents/lockstep.yaml", "testdata/import/envoy-routes.yaml#stock"})
	if _, err := Load(in, LoadOptions{Format: FormatGRPC}); err == nil || !strings.Contains(err.Error(), "envoy-routes.yaml: no retry policy found in this grpc file") {
		t.Errorf("--format grpc on an Envoy file: %v", err)
	}
}

// TestHostileText: control characters from a file never reach the output.
func TestHostileText(t *testing.T) {
	data := callPathHead + "hops:\n  - service: \"che\\x1b[31mckout\\u202e\"\n    timeout: 1s\ndependency: {name: \"inv\\r\\nentory\"}\n"
	p, err := Load([]Input{{Name: "evil\x1b.yaml", Data: []byte(data)}}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{p.Hops[0].Service, p.Dependency.Name, p.Files[0], p.Hops[0].Source} {
		if strings.ContainsAny(s, "\x1b\r\n\u202e") {
			t.Errorf("raw control character in %q", s)
		}
	}
	_, err = Load([]Input{{Name: "bad\x1b.yaml", Data: []byte(callPathHead + "hops:\n  - service: a\n    \"x\\x07\": 1\n")}}, LoadOptions{})
	if err == nil || strings.ContainsAny(err.Error(), "\x1b\x07") {
		t.Errorf("error with raw control characters: %q", err)
	}
}
