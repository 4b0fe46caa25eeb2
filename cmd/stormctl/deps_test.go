package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// forbiddenPkgs are the import-path prefixes that must never be linked into the
// responder's stormctl: code an incident tool holding production credentials
// does not need. Prometheus's web API, tsdb and config pull every
// remote-write and service-discovery client, and those pull the cloud SDKs;
// the Kubernetes client belongs to stormctl-actuator (-tags actuator).
var forbiddenPkgs = []string{
	// cloud-provider SDKs
	"github.com/aws", "github.com/Azure", "github.com/AzureAD", "cloud.google.com/go",
	"google.golang.org/api", "github.com/googleapis/gax-go", "github.com/oracle/oci-go-sdk",
	"github.com/aliyun", "github.com/tencentcloud",
	// service-discovery clients (what Prometheus's discovery/... links)
	"github.com/hashicorp/consul", "github.com/hashicorp/nomad", "github.com/hetznercloud",
	"github.com/linode", "github.com/digitalocean", "github.com/gophercloud", "github.com/ovh",
	"github.com/vultr", "github.com/scaleway", "github.com/ionos-cloud", "github.com/docker/docker",
	"github.com/go-zookeeper", "github.com/stackitcloud", "github.com/envoyproxy/go-control-plane",
	"github.com/prometheus/prometheus/discovery",
	// Prometheus's server parts
	"github.com/prometheus/prometheus/web", "github.com/prometheus/prometheus/config",
	"github.com/prometheus/prometheus/scrape", "github.com/prometheus/prometheus/rules",
	"github.com/prometheus/prometheus/notifier", "github.com/prometheus/prometheus/storage/remote",
	"github.com/prometheus/prometheus/tsdb",
	// the Kubernetes client
	"k8s.io/client-go", "sigs.k8s.io/controller-runtime",
}

// allowedPkgs are the packages under a forbidden prefix that promql and its
// storage interfaces need: sample encodings, no database.
var allowedPkgs = map[string]bool{
	"github.com/prometheus/prometheus/tsdb/chunkenc": true,
	"github.com/prometheus/prometheus/tsdb/chunks":   true,
	"github.com/prometheus/prometheus/tsdb/fileutil": true,
	"github.com/prometheus/prometheus/tsdb/tsdbutil": true,
}

// maxPackages bounds the responder's build graph (it was 1,518 packages
// with Prometheus's web API, tsdb and the Kubernetes client linked).
const maxPackages = 700

// TestResponderGraphIsLean lists the packages `go build ./cmd/stormctl`
// links and fails on any forbidden one, naming who imports it.
func TestResponderGraphIsLean(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the build graph")
	}
	pkgs := goList(t)
	if len(pkgs) > maxPackages {
		t.Errorf("stormctl links %d packages, more than %d", len(pkgs), maxPackages)
	}
	for path, importers := range pkgs {
		for _, f := range forbiddenPkgs {
			if (path == f || strings.HasPrefix(path, f+"/")) && !allowedPkgs[path] {
				t.Errorf("forbidden package %s is linked (imported by %s)", path, strings.Join(importers, ", "))
			}
		}
	}
	if _, ok := pkgs["github.com/prometheus/prometheus/promql"]; !ok {
		t.Error("the lab's PromQL engine (github.com/prometheus/prometheus/promql) is not linked: did the graph listing break?")
	}
}

// goList returns every package of the default build of this command with
// the packages of the graph that import it.
func goList(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, ".")
	// The default build, whatever tags this test was built with.
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if _, ok := pkgs[f[0]]; !ok {
			pkgs[f[0]] = nil
		}
		for _, imp := range f[1:] {
			pkgs[imp] = append(pkgs[imp], f[0])
		}
	}
	return pkgs
}
