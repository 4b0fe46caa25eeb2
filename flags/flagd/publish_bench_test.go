package flagd

import (
	"fmt"
	"testing"
	"time"

	"github.com/stormctl/stormctl/lever"
)

// BenchmarkPublish: what the server does per lever change — render,
// validate through flagd's evaluator, publish — against rendering alone.
func BenchmarkPublish(b *testing.B) {
	for _, n := range []int{1, 50} {
		var ls []lever.Lever
		for i := range n {
			ls = append(ls, lv(lever.Retries, fmt.Sprintf("svc-%02d->payments", i), "off", 1))
		}
		v, err := NewValidator()
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("render/levers=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Render(Input{Levers: ls}, Selector{}).Marshal()
			}
		})
		b.Run(fmt.Sprintf("publish/levers=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			h := NewHub(0)
			i := 0
			for b.Loop() {
				i++
				ls[0].Version = int64(i)
				if _, err := h.Publish(Input{Levers: ls}, v, time.Now(), nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
