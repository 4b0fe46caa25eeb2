package deploy

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kube "github.com/stormctl/stormctl/actuators/kubernetes"
	"github.com/stormctl/stormctl/internal/testenv/kubeenv"
)

const manifests = "kubernetes"

// objects renders the kustomization with kustomize's own engine (the tools
// module hack/kustomize, built once into the Go build cache) and decodes
// every object it emits: what `kubectl apply -k` would send.
func objects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	bin := cachedTool(t, "kustomize", "kustomize")
	cmd := exec.Command(bin, manifests)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kustomize %s: %v\n%s", manifests, err, stderr.Bytes())
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("rendered object %d: %v", len(objs)+1, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	if len(objs) == 0 {
		t.Fatalf("kustomize rendered nothing:\n%s", out)
	}
	return objs
}

// Every manifest file in deploy/kubernetes is one of the kustomization's
// resources, so nothing written there is left out of what users apply.
func TestKustomizationListsEveryManifest(t *testing.T) {
	var k struct{ Resources []string }
	raw, err := os.ReadFile(filepath.Join(manifests, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &k); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(manifests, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if name := filepath.Base(f); name != "kustomization.yaml" && !slices.Contains(k.Resources, name) {
			t.Errorf("%s is not in kustomization.yaml's resources", name)
		}
	}
}

// The RBAC objects are exactly what the actuator prints with --print-rbac.
func TestManifestRBACIsTheActuators(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(manifests, "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var body []string
	for line := range strings.Lines(string(b)) {
		if !strings.HasPrefix(line, "#") {
			body = append(body, line)
		}
	}
	if got, want := strings.Join(body, ""), kube.RBAC("shop", "stormctl-actuator"); got != want {
		t.Errorf("deploy/kubernetes/rbac.yaml differs from --print-rbac:\n%s\nwant:\n%s", got, want)
	}
}

// Every object kustomize renders is accepted by a real kube-apiserver
// (server-side dry run),
// and the workloads keep the rules: non-root, read-only root filesystem,
// probes on /healthz and /readyz, resource requests, Redis from a Secret,
// two replicas each with a PodDisruptionBudget.
func TestManifestsAcceptedByKubeAPIServer(t *testing.T) {
	objs := objects(t)
	pdbs := map[string]bool{}
	deployments := 0
	for _, u := range objs {
		switch u.GetKind() {
		case "PodDisruptionBudget":
			pdbs[u.GetName()] = true
		case "Deployment":
			deployments++
			checkWorkload(t, u)
		}
	}
	if deployments != 2 {
		t.Errorf("%d Deployments, want flagd and the actuator", deployments)
	}
	for _, u := range objs {
		if u.GetKind() == "Deployment" && !pdbs[u.GetName()] {
			t.Errorf("Deployment %s has no PodDisruptionBudget", u.GetName())
		}
	}

	env := kubeenv.StartOwned(t)
	c, err := client.New(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}); err != nil {
		t.Fatal(err)
	}
	for _, u := range objs {
		if err := c.Create(ctx, u, client.DryRunAll); err != nil {
			t.Errorf("%s %s: refused by kube-apiserver: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

func checkWorkload(t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	name := u.GetName()
	// sigs.k8s.io/yaml decodes numbers as float64.
	if r, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "replicas"); r != float64(2) {
		t.Errorf("%s: %v replicas, want 2", name, r)
	}
	if v, _, _ := unstructured.NestedBool(u.Object, "spec", "template", "spec", "securityContext", "runAsNonRoot"); !v {
		t.Errorf("%s: runAsNonRoot not set", name)
	}
	cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	if len(cs) != 1 {
		t.Fatalf("%s: %d containers", name, len(cs))
	}
	ctr := cs[0].(map[string]any)
	if v, _, _ := unstructured.NestedBool(ctr, "securityContext", "readOnlyRootFilesystem"); !v {
		t.Errorf("%s: root filesystem not read-only", name)
	}
	if v, ok, _ := unstructured.NestedBool(ctr, "securityContext", "allowPrivilegeEscalation"); !ok || v {
		t.Errorf("%s: privilege escalation allowed", name)
	}
	for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		if p, _, _ := unstructured.NestedString(ctr, probe, "httpGet", "path"); p != path {
			t.Errorf("%s: %s on %q, want %s", name, probe, p, path)
		}
	}
	for _, res := range []string{"cpu", "memory"} {
		if v, _, _ := unstructured.NestedString(ctr, "resources", "requests", res); v == "" {
			t.Errorf("%s: no %s request", name, res)
		}
	}
	envs, _, _ := unstructured.NestedSlice(ctr, "env")
	fromSecret := false
	for _, e := range envs {
		m := e.(map[string]any)
		if m["name"] == "STORMCTL_REDIS_URL" {
			s, _, _ := unstructured.NestedString(m, "valueFrom", "secretKeyRef", "name")
			fromSecret = s != "" && m["value"] == nil
		}
	}
	if !fromSecret {
		t.Errorf("%s: STORMCTL_REDIS_URL does not come from a Secret", name)
	}
}
