package policy

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/parser"
)

// benchPath is a 10-hop path from 5 files, one of each format: six
// CallPath hops (three services and their sidecars, passing the deadline
// down), checkout's resilience4j retry, its Envoy route, its Istio route
// and a gRPC client's method config.
func benchPath(b *testing.B) []Input {
	var cp strings.Builder
	cp.WriteString("apiVersion: stormctl/v1\nkind: CallPath\nname: bench\nrate: 400/s\ndeadline: 10s\nhops:\n")
	for i := range 3 {
		fmt.Fprintf(&cp, "  - service: svc%d\n    pool: {name: http, size: 200, replicas: 4}\n    timeout: 4s\n    propagate_deadline: true\n"+
			"    retry: {attempts: 3, backoff: exponential, base: 50ms, max: 1s, jitter: full, on: [timeout, 5xx], budget: 10%%}\n", i)
		fmt.Fprintf(&cp, "  - service: svc%d-sidecar\n    timeout: 1s\n    retry: {attempts: 2, on: [connect_error, 5xx]}\n", i)
	}
	cp.WriteString("dependency: {name: inventory, p99: 900ms}\n")
	in := []Input{{Name: "bench.yaml", Data: []byte(cp.String())}}
	for _, f := range []string{"application.yml#inventory", "envoy-routes.yaml#stock", "istio-v1.yaml#stock", "grpc-service-config.json#GetStock"} {
		name := "testdata/import/" + f
		data, err := os.ReadFile(strings.SplitN(name, "#", 2)[0])
		if err != nil {
			b.Fatal(err)
		}
		in = append(in, Input{Name: name, Data: data})
	}
	return in
}

// BenchmarkAnalyze10Hops5Files loads and analyses the 10-hop path.
func BenchmarkAnalyze10Hops5Files(b *testing.B) {
	in := benchPath(b)
	b.ReportAllocs()
	for b.Loop() {
		p, err := Load(in, LoadOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if len(p.Hops) != 10 {
			b.Fatalf("%d hops", len(p.Hops))
		}
		Analyze(p)
	}
}

// BenchmarkParse5Files is the baseline: the YAML parser alone on the same
// five files.
func BenchmarkParse5Files(b *testing.B) {
	in := benchPath(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, f := range in {
			if _, err := parser.ParseBytes(f.Data, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
}
