package kubernetes_test

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kube "github.com/stormctl/stormctl/actuators/kubernetes"
	"github.com/stormctl/stormctl/lever"
)

const benchRoutes = 50

// routeRule is the one rule of each benchmark route, with retry attempts n.
func routeRule(n int) string {
	return fmt.Sprintf(`{"backendRefs":[{"name":"payments","port":8080}],"retry":{"attempts":%d,"codes":[503]}}`, n)
}

// BenchmarkCap50Routes measures a retries lever change → the 50 HTTPRoutes
// of checkout's calls to payments capped (retry.attempts 3 → 1) in the real
// API server, against a client sending the same 50 patches itself, one
// after another, in the same run; and counts the API server's requests on
// httproutes per actuation (apiserver_request_total): one PATCH per route,
// no LIST or GET.
func BenchmarkCap50Routes(b *testing.B) {
	f := newFixture(b)
	for i := range benchRoutes {
		f.object(fmt.Sprintf(`{"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute","metadata":{"name":"checkout-%02d","labels":{"app":"checkout"}},
		"spec":{"parentRefs":[{"group":"","kind":"Service","name":"payments"}],"rules":[%s]}}`, i, routeRule(3)))
	}
	patchAll := func(n int) {
		for i := range benchRoutes {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(kube.HTTPRouteKind)
			u.SetName(fmt.Sprintf("checkout-%02d", i))
			u.SetNamespace(f.ns)
			if err := f.admin.Patch(ctx(b), u, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"rules":[`+routeRule(n)+`]}}`))); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("baseline-direct-patches", func(b *testing.B) {
		var lat []time.Duration
		for b.Loop() {
			start := time.Now()
			patchAll(1)
			lat = append(lat, time.Since(start))
			b.StopTimer()
			patchAll(3)
			b.StartTimer()
		}
		report(b, lat)
	})
	b.Run("actuator", func(b *testing.B) {
		r := f.start(nil, kube.Mapping{Services: map[string]kube.ServiceObjects{"checkout": {GatewayAPI: true, GatewayAPIService: []string{"payments"}}}}, "bench")
		r.ready(b)
		rw := f.watchRoutes(b)
		defer rw.w.Stop()
		var lat []time.Duration
		var patches, reads float64
		for b.Loop() {
			before := requests(b, f.env.Config, "httproutes")
			start := time.Now()
			f.apply(lever.Retries, "checkout->payments", "cap:2", 10*time.Minute)
			rw.wait(b, 1)
			lat = append(lat, time.Since(start))
			b.StopTimer()
			time.Sleep(300 * time.Millisecond) // let the passes the writes trigger finish
			after := requests(b, f.env.Config, "httproutes")
			patches += after["PATCH"] - before["PATCH"]
			reads += after["LIST"] - before["LIST"] + after["GET"] - before["GET"]
			f.release(lever.Retries, "checkout->payments")
			rw.wait(b, 3)
			b.StartTimer()
		}
		report(b, lat)
		n := float64(len(lat))
		b.ReportMetric(patches/n, "patches/actuation")
		b.ReportMetric(reads/n, "lists+gets/actuation")
	})
}

// routeWatch follows the routes' retry.attempts with a watch (verb WATCH,
// which the request count leaves out).
type routeWatch struct {
	w        watch.Interface
	attempts map[string]int64
}

func (f *fixture) watchRoutes(b *testing.B) *routeWatch {
	wc, err := client.NewWithWatch(f.env.Config, client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(kube.HTTPRouteKind.GroupVersion().WithKind("HTTPRouteList"))
	if err := wc.List(ctx(b), l, client.InNamespace(f.ns)); err != nil {
		b.Fatal(err)
	}
	rw := &routeWatch{attempts: map[string]int64{}}
	for i := range l.Items {
		rw.attempts[l.Items[i].GetName()] = attemptsOf(&l.Items[i])
	}
	wl := &unstructured.UnstructuredList{}
	wl.SetGroupVersionKind(l.GroupVersionKind())
	rw.w, err = wc.Watch(ctx(b), wl, client.InNamespace(f.ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: l.GetResourceVersion()}})
	if err != nil {
		b.Fatal(err)
	}
	return rw
}

func attemptsOf(u *unstructured.Unstructured) int64 {
	rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "rules")
	if len(rules) == 0 {
		return -1
	}
	n, _, _ := unstructured.NestedInt64(rules[0].(map[string]any), "retry", "attempts")
	return n
}

// wait consumes events until every route has retry.attempts want.
func (rw *routeWatch) wait(b *testing.B, want int64) {
	timeout := time.After(time.Minute)
	for {
		n := 0
		for _, v := range rw.attempts {
			if v == want {
				n++
			}
		}
		if n == benchRoutes {
			return
		}
		select {
		case ev, ok := <-rw.w.ResultChan():
			if !ok {
				b.Fatal("route watch closed")
			}
			if u, isU := ev.Object.(*unstructured.Unstructured); isU {
				rw.attempts[u.GetName()] = attemptsOf(u)
			}
		case <-timeout:
			b.Fatalf("routes not all at attempts %d after a minute", want)
		}
	}
}
