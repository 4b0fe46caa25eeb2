//go:build actuator

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rogpeppe/go-internal/testscript"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/internal/testenv/kubeenv"
)

// churnFixture is risk-agent's replica count as Prometheus stores it after
// scraping the service (job and instance labels): 24 pods until under five
// minutes ago, then the HPA adds three pods a scrape up to 78.
func churnFixture(end time.Time) string {
	const step = 15 * time.Second
	n := 40 * 4
	start := end.Add(-step * time.Duration(n-1))
	v := make([]float64, n)
	for i := range v {
		v[i] = 24
		if ramp := i - (n - 19); ramp > 0 {
			v[i] = min(78, 24+float64(ramp)*3)
		}
	}
	om := testenv.NewOpenMetrics()
	om.Gauge("stormctl_replicas", map[string]string{"service": "risk-agent", "job": "risk-agent", "instance": "10.0.3.7:9102"}, start, step, v)
	return om.String()
}

// TestActuateKubernetesScripts runs testdata/kubernetes: playbooks pull
// levers through Main while `stormctl actuate kubernetes` (the same binary)
// applies them to a real kube-apiserver + etcd, with a real Prometheus
// holding the evidence and a real redis-server the levers.
func TestActuateKubernetesScripts(t *testing.T) {
	env := kubeenv.StartOwned(t)
	admin, err := client.New(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}); err != nil {
		t.Fatal(err)
	}
	minReplicas, util := int32(24), int32(60)
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "risk-agent", Namespace: "shop", Labels: map[string]string{"app.kubernetes.io/name": "risk-agent"}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "risk-agent"},
			MinReplicas:    &minReplicas, MaxReplicas: 120,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &util}}}},
		},
	}
	if err := admin.Create(ctx, hpa); err != nil {
		t.Fatal(err)
	}
	user, err := env.AddUser(envtest.User{Name: "stormctl-actuator", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	pr := testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: churnFixture(time.Now().Truncate(15 * time.Second))})
	rd := testenv.StartRedis(t, testenv.RedisOptions{})
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/kubernetes",
		RequireExplicitExec: true,
		Setup: func(e *testscript.Env) error {
			ns := filepath.Base(e.WorkDir)
			cfg := "contexts:\n  test:\n    redis:\n      namespace: " + ns + "\ncurrent-context: test\n"
			for name, data := range map[string][]byte{"config.yaml": []byte(cfg), "kubeconfig": kubeconfig} {
				if err := os.WriteFile(filepath.Join(e.WorkDir, name), data, 0o600); err != nil {
					return err
				}
			}
			e.Setenv("STORMCTL_CONFIG", filepath.Join(e.WorkDir, "config.yaml"))
			e.Setenv("STORMCTL_PROMETHEUS_URL", pr.URL)
			e.Setenv("STORMCTL_REDIS_URL", rd.URL("", ""))
			e.Setenv("STORMCTL_ACTOR", "alice")
			e.Setenv("XDG_STATE_HOME", filepath.Join(e.WorkDir, "state"))
			e.Setenv("NO_COLOR", "1")
			e.Values["ns"] = ns
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits": cmdExits,
			// hpa NAME frozen|restored: poll the API server until the HPA is
			// frozen, or back to exactly its original spec.behavior (absent).
			"hpa": func(ts *testscript.TestScript, _ bool, args []string) {
				if len(args) != 2 {
					ts.Fatalf("usage: hpa NAME frozen|restored")
				}
				poll(ts, "hpa "+args[0]+" "+args[1], func() (bool, string) {
					var h autoscalingv2.HorizontalPodAutoscaler
					if err := admin.Get(ctx, client.ObjectKey{Namespace: "shop", Name: args[0]}, &h); err != nil {
						return false, err.Error()
					}
					b := h.Spec.Behavior
					if args[1] == "restored" {
						return b == nil && h.Annotations["stormctl.io/saved"] == "", js(b)
					}
					return b != nil && b.ScaleUp != nil && b.ScaleDown != nil &&
						*b.ScaleUp.SelectPolicy == autoscalingv2.DisabledPolicySelect &&
						*b.ScaleDown.SelectPolicy == autoscalingv2.DisabledPolicySelect, js(b)
				})
			},
			// journaled EVENT: poll the journal until an entry of EVENT is there.
			"journaled": func(ts *testscript.TestScript, _ bool, args []string) {
				store, err := controlplane.NewStore(ctx, redis.NewClient(&redis.Options{Addr: rd.Addr}), ts.Value("ns").(string))
				if err != nil {
					ts.Fatalf("%v", err)
				}
				defer store.Close()
				poll(ts, "journal entry "+args[0], func() (bool, string) {
					for rec, err := range store.Journal().Range(ctx, "-", "+") {
						if err != nil {
							return false, err.Error()
						}
						if strings.Contains(string(rec.Data), `"event":"`+args[0]+`"`) {
							return true, ""
						}
					}
					return false, "none yet"
				})
			},
		},
	})
}

func poll(ts *testscript.TestScript, what string, cond func() (bool, string)) {
	if ok, last := kubeenv.Poll(45*time.Second, cond); !ok {
		ts.Fatalf("%s: not after 45s; last: %s", what, last)
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
