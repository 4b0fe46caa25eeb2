package kubernetes_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kube "github.com/stormctl/stormctl/actuators/kubernetes"
	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/internal/testenv/kubeenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

func TestMain(m *testing.M) { os.Exit(kubeenv.Main(m)) }

// fixture is one test's world: a namespace of the shared real API server,
// its own real redis-server and control-plane store.
type fixture struct {
	t     testing.TB
	env   *kubeenv.Env
	admin client.Client
	ns    string
	store *controlplane.Store
	redis *testenv.Redis
	// actStore, if set, is the actuators' own connection (another Redis user).
	actStore *controlplane.Store
}

// newFixture builds the world; acl, if given, returns the ACL lines of the
// redis-server for the test's namespace.
func newFixture(t testing.TB, acl ...func(ns string) []string) *fixture {
	t.Helper()
	return newFixtureOn(t, kubeenv.Start(t, "testdata/crds"), acl...)
}

// newFixtureOn builds the world on a given control plane (a test's own,
// when it stops the API server).
func newFixtureOn(t testing.TB, env *kubeenv.Env, acl ...func(ns string) []string) *fixture {
	t.Helper()
	admin, err := client.New(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	ns := "shop-" + hex.EncodeToString(b)
	if err := admin.Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, a := range acl {
		lines = append(lines, a(ns)...)
	}
	r := testenv.StartRedis(t, testenv.RedisOptions{ACL: lines})
	rc := redis.NewClient(&redis.Options{Addr: r.Addr})
	store, err := controlplane.NewStore(ctx(t), rc, ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return &fixture{t: t, env: env, admin: admin, ns: ns, store: store, redis: r}
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// running is an actuator replica started by a test.
type running struct {
	a    *kube.Actuator
	addr string
	stop func()
	done chan error // receives Run's result if it returns by itself
}

// get requests path from the replica's HTTP endpoints.
func (r *running) get(path string) (int, string) {
	resp, err := http.Get("http://" + r.addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// start runs an actuator replica with the given credentials (nil: admin)
// until stopped or the test ends.
func (f *fixture) start(cfg *rest.Config, m kube.Mapping, instance string) *running {
	f.t.Helper()
	if cfg == nil {
		cfg = f.env.Config
	}
	if m.Namespace == "" {
		m.Namespace = f.ns
	}
	store := f.store
	if f.actStore != nil {
		store = f.actStore
	}
	c, cancel := context.WithCancel(context.Background())
	got := make(chan *running, 1)
	done := make(chan error, 1)
	go func() {
		done <- kube.Run(c, kube.RunOptions{Config: cfg, Mapping: m, Store: store, Instance: instance,
			Actor: "actuator/" + instance, Resync: 2 * time.Second, Listen: "127.0.0.1:0",
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond,
			Started: func(a *kube.Actuator, addr string) { got <- &running{a: a, addr: addr} }})
	}()
	var r *running
	select {
	case r = <-got:
		r.done = done
	case err := <-done:
		cancel()
		f.t.Fatalf("actuator %s did not start: %v", instance, err)
	}
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					f.t.Errorf("actuator %s: %v", instance, err)
				}
			case <-time.After(30 * time.Second):
				f.t.Errorf("actuator %s did not stop", instance)
			}
		})
	}
	f.t.Cleanup(r.stop)
	return r
}

// ready waits for the replica's first completed pass.
func (r *running) ready(t testing.TB) {
	t.Helper()
	select {
	case <-r.a.Ready():
	case <-time.After(45 * time.Second):
		t.Fatal("no pass completed after 45s")
	}
}

// apply sets a lever through the control plane, as `stormctl action apply`.
func (f *fixture) apply(kind lever.Kind, target, value string, ttl time.Duration) *lever.Lever {
	f.t.Helper()
	cur, ver, head, err := f.store.Get(ctx(f.t), kind, target)
	if err != nil {
		f.t.Fatal(err)
	}
	res, err := f.store.Apply(ctx(f.t), controlplane.ApplyRequest{
		Lever:    lever.Lever{Kind: kind, Target: target, Value: value, Actor: "alice", Reason: "retry storm", ExpiresAt: time.Now().Add(ttl)},
		Expected: ver, Current: cur, Head: head, Entry: journal.Entry{Actor: "alice", TTL: journal.Duration(ttl)},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return res.Lever
}

// release releases a lever, as `stormctl action release`.
func (f *fixture) release(kind lever.Kind, target string) {
	f.t.Helper()
	cur, _, head, err := f.store.Get(ctx(f.t), kind, target)
	if err != nil || cur == nil {
		f.t.Fatalf("release %s %s: lever %v, %v", kind, target, cur, err)
	}
	if _, err := f.store.Release(ctx(f.t), controlplane.ReleaseRequest{Current: cur, Head: head, Entry: journal.Entry{Actor: "alice"}}); err != nil {
		f.t.Fatal(err)
	}
}

// eventually polls cond for up to a generous deadline.
func eventually(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	if ok, last := kubeenv.Poll(45*time.Second, cond); !ok {
		t.Fatalf("%s: not after 45s; last: %s", what, last)
	}
}

// appliedAs waits until the actuation.applied entries of action id name
// exactly the objects in want, each with its role (the entry's outcome).
func (f *fixture) appliedAs(what, id string, want map[string]string) {
	f.t.Helper()
	eventually(f.t, what, func() (bool, string) {
		roles := map[string]string{}
		for _, e := range f.entries(journal.ActuationApplied) {
			if e.ActionID == id {
				roles[e.Object] = e.Outcome
			}
		}
		return js(roles) == js(want), js(roles)
	})
}

// journaled waits until at least n entries of event ev are in the journal
// and returns them all: the actuator journals after its patch, so an
// object can show the change before its entry is written.
func (f *fixture) journaled(ev journal.Event, n int) []journal.Entry {
	f.t.Helper()
	var r []journal.Entry
	eventually(f.t, fmt.Sprintf("%d %s journaled", n, ev), func() (bool, string) {
		r = f.entries(ev)
		return len(r) >= n, js(r)
	})
	return r
}

// entries reads the journal entries of event ev.
func (f *fixture) entries(ev journal.Event) []journal.Entry {
	f.t.Helper()
	var out []journal.Entry
	for rec, err := range f.store.Journal().Range(ctx(f.t), "-", "+") {
		if err != nil {
			f.t.Fatal(err)
		}
		var e journal.Entry
		if err := json.Unmarshal(rec.Data, &e); err != nil {
			f.t.Fatalf("journal record %s: %v", rec.Pos, err)
		}
		if e.Event == ev {
			out = append(out, e)
		}
	}
	return out
}

// hpa creates an autoscaling/v2 HPA of service checkout, as a chart would,
// and returns it as the API server stored it (defaults included).
func (f *fixture) hpa(name string, behavior *autoscalingv2.HorizontalPodAutoscalerBehavior, labels map[string]string) *autoscalingv2.HorizontalPodAutoscaler {
	f.t.Helper()
	min := int32(24)
	util := int32(60)
	h := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: labels},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			MinReplicas:    &min, MaxReplicas: 80, Behavior: behavior,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &util}}}},
		},
	}
	if err := f.admin.Create(ctx(f.t), h, client.FieldOwner("helm")); err != nil {
		f.t.Fatal(err)
	}
	return h
}

func (f *fixture) getHPA(name string) *autoscalingv2.HorizontalPodAutoscaler {
	f.t.Helper()
	h := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := f.admin.Get(ctx(f.t), client.ObjectKey{Namespace: f.ns, Name: name}, h); err != nil {
		f.t.Fatal(err)
	}
	return h
}

func frozen(h *autoscalingv2.HorizontalPodAutoscaler) bool {
	b := h.Spec.Behavior
	return b != nil && b.ScaleUp != nil && b.ScaleDown != nil && b.ScaleUp.SelectPolicy != nil && b.ScaleDown.SelectPolicy != nil &&
		*b.ScaleUp.SelectPolicy == autoscalingv2.DisabledPolicySelect && *b.ScaleDown.SelectPolicy == autoscalingv2.DisabledPolicySelect
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
