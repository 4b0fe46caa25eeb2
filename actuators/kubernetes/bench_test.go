package kubernetes_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kube "github.com/stormctl/stormctl/actuators/kubernetes"
	"github.com/stormctl/stormctl/lever"
)

const benchHPAs = 50

// BenchmarkFreeze50HPAs measures a lever change → all 50 HPAs of a service
// frozen in the real API server (p50/p99 per actuation), and the API
// server's own count of requests on HPAs per actuation
// (apiserver_request_total): the target is one PATCH per object and no
// LIST or GET. The baseline is the floor for the same 50 writes: a client
// sending the 50 freeze patches itself, one after another, in the same run.
func BenchmarkFreeze50HPAs(b *testing.B) {
	f := newFixture(b)
	for i := range benchHPAs {
		f.hpa(fmt.Sprintf("checkout-%02d", i), nil, checkoutLabels)
	}
	b.Run("baseline-direct-patches", func(b *testing.B) {
		var lat []time.Duration
		for b.Loop() {
			start := time.Now()
			for i := range benchHPAs {
				patch := `{"spec":{"behavior":{"scaleUp":{"selectPolicy":"Disabled"},"scaleDown":{"selectPolicy":"Disabled"}}}}`
				h := &autoscalingv2.HorizontalPodAutoscaler{}
				h.Name, h.Namespace = fmt.Sprintf("checkout-%02d", i), f.ns
				if err := f.admin.Patch(ctx(b), h, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
					b.Fatal(err)
				}
			}
			lat = append(lat, time.Since(start))
			b.StopTimer()
			for i := range benchHPAs {
				h := &autoscalingv2.HorizontalPodAutoscaler{}
				h.Name, h.Namespace = fmt.Sprintf("checkout-%02d", i), f.ns
				if err := f.admin.Patch(ctx(b), h, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"behavior":null}}`))); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
		}
		report(b, lat)
	})
	b.Run("actuator", func(b *testing.B) {
		r := f.start(nil, kube.Mapping{}, "bench")
		<-r.a.Ready()
		hw := f.watchHPAs(b)
		defer hw.w.Stop()
		var lat []time.Duration
		var patches, reads float64
		for b.Loop() {
			before := requests(b, f.env.Config, "horizontalpodautoscalers")
			start := time.Now()
			f.apply(lever.Autoscaling, "checkout", lever.ValueFrozen, 10*time.Minute)
			hw.wait(b, true)
			lat = append(lat, time.Since(start))
			b.StopTimer()
			time.Sleep(300 * time.Millisecond) // let the passes the writes trigger finish
			after := requests(b, f.env.Config, "horizontalpodautoscalers")
			patches += after["PATCH"] - before["PATCH"]
			reads += after["LIST"] - before["LIST"] + after["GET"] - before["GET"]
			f.release(lever.Autoscaling, "checkout")
			hw.wait(b, false)
			b.StartTimer()
		}
		report(b, lat)
		n := float64(len(lat))
		b.ReportMetric(patches/n, "patches/actuation")
		b.ReportMetric(reads/n, "lists+gets/actuation")
	})
}

// hpaWatch follows the HPAs with a watch (verb WATCH, which the request
// count leaves out), so observing the actuator costs it no LIST or GET.
type hpaWatch struct {
	w      watch.Interface
	frozen map[string]bool
}

func (f *fixture) watchHPAs(b *testing.B) *hpaWatch {
	wc, err := client.NewWithWatch(f.env.Config, client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var l autoscalingv2.HorizontalPodAutoscalerList
	if err := wc.List(ctx(b), &l, client.InNamespace(f.ns)); err != nil {
		b.Fatal(err)
	}
	hw := &hpaWatch{frozen: map[string]bool{}}
	for i := range l.Items {
		hw.frozen[l.Items[i].Name] = frozen(&l.Items[i])
	}
	hw.w, err = wc.Watch(ctx(b), &autoscalingv2.HorizontalPodAutoscalerList{}, client.InNamespace(f.ns),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: l.ResourceVersion}})
	if err != nil {
		b.Fatal(err)
	}
	return hw
}

// wait consumes events until every HPA is frozen (or every one thawed).
func (hw *hpaWatch) wait(b *testing.B, want bool) {
	timeout := time.After(time.Minute)
	for {
		n := 0
		for _, v := range hw.frozen {
			if v == want {
				n++
			}
		}
		if n == benchHPAs {
			return
		}
		select {
		case ev, ok := <-hw.w.ResultChan():
			if !ok {
				b.Fatal("HPA watch closed")
			}
			if h, isHPA := ev.Object.(*autoscalingv2.HorizontalPodAutoscaler); isHPA {
				hw.frozen[h.Name] = frozen(h)
			}
		case <-timeout:
			b.Fatalf("HPAs not all frozen=%v after a minute", want)
		}
	}
}

func report(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds())/1000, "p99-ms")
}

// requests reads the API server's apiserver_request_total for resource, by
// verb, counting only PATCH, LIST and GET.
func requests(b *testing.B, cfg *rest.Config, resource string) map[string]float64 {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		b.Fatal(err)
	}
	resp, err := hc.Get(strings.TrimSuffix(cfg.Host, "/") + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		b.Fatalf("apiserver /metrics: %s %s", resp.Status, body)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="`+resource+`"`) {
			continue
		}
		for _, verb := range []string{"PATCH", "LIST", "GET"} {
			if strings.Contains(line, `verb="`+verb+`"`) {
				var v float64
				fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &v)
				out[verb] += v
			}
		}
	}
	return out
}
