package sim

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
)

// series is one time series of the metric contract; the simulation updates
// v in place and the sampler copies it out every scrape interval.
type series struct {
	lset labels.Labels
	text string // exposition form: name{labels}
	ref  storage.SeriesRef
	v    float64
	last float64 // v at the last scrape interval, as /metrics shows it
	gone bool    // emit a staleness marker once, then drop
	dead bool
}

type family struct {
	name, help, typ string
	series          []*series
}

// registry holds every series in registration order.
type registry struct {
	fams   []*family
	byName map[string]*family
}

func newRegistry() *registry { return &registry{byName: map[string]*family{}} }

func (r *registry) add(typ, name, help string, kv ...string) *series {
	f := r.byName[name]
	if f == nil {
		f = &family{name: name, help: help, typ: typ}
		r.byName[name] = f
		r.fams = append(r.fams, f)
	}
	sname := name
	switch {
	case typ == "histogram" && kv[len(kv)-2] == "le":
		sname += "_bucket"
	case typ == "histogram" && kv[len(kv)-1] == "sum":
		sname, kv = name+"_sum", kv[:len(kv)-2]
	case typ == "histogram" && kv[len(kv)-1] == "count":
		sname, kv = name+"_count", kv[:len(kv)-2]
	}
	b := labels.NewScratchBuilder(len(kv)/2 + 1)
	b.Add(model.MetricNameLabel, sname)
	var text strings.Builder
	text.WriteString(sname)
	text.WriteByte('{')
	for i := 0; i < len(kv); i += 2 {
		b.Add(kv[i], kv[i+1])
		if i > 0 {
			text.WriteByte(',')
		}
		fmt.Fprintf(&text, "%s=%s", kv[i], strconv.Quote(kv[i+1]))
	}
	text.WriteByte('}')
	b.Sort()
	s := &series{lset: b.Labels(), text: text.String()}
	f.series = append(f.series, s)
	return s
}

func (r *registry) counter(name, help string, kv ...string) *series {
	return r.add("counter", name, help, kv...)
}

func (r *registry) gauge(name, help string, kv ...string) *series {
	return r.add("gauge", name, help, kv...)
}

// durationBuckets are client_golang's default buckets.
var durationBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// histogram is a classic histogram; counts are per bucket and made
// cumulative when sampled.
type histogram struct {
	buckets    []*series // one per durationBuckets, then +Inf
	counts     []uint64
	sum, count *series
}

func (r *registry) histogram(name, help string, kv ...string) *histogram {
	h := &histogram{counts: make([]uint64, len(durationBuckets)+1)}
	for _, le := range durationBuckets {
		h.buckets = append(h.buckets, r.add("histogram", name, help, append(kv, "le", strconv.FormatFloat(le, 'g', -1, 64))...))
	}
	h.buckets = append(h.buckets, r.add("histogram", name, help, append(kv, "le", "+Inf")...))
	h.sum = r.add("histogram", name, help, append(kv, "", "sum")...)
	h.count = r.add("histogram", name, help, append(kv, "", "count")...)
	return h
}

func (h *histogram) observe(v float64) {
	i := sort.SearchFloat64s(durationBuckets, v)
	h.counts[i]++
	h.sum.v += v
	h.count.v++
}

func (h *histogram) cumulate() {
	var c uint64
	for i, n := range h.counts {
		c += n
		h.buckets[i].v = float64(c)
	}
}

// appendTo writes every live series at t (ms) through the store's appender.
func (r *registry) appendTo(app Appender, t int64) error {
	for _, f := range r.fams {
		for _, s := range f.series {
			if s.dead {
				continue
			}
			v := s.v
			if s.gone {
				v, s.dead = math.Float64frombits(value.StaleNaN), true
			}
			ref, err := app.Append(s.ref, s.lset, t, v)
			if err != nil {
				return fmt.Errorf("append %s: %w", s.text, err)
			}
			s.ref = ref
		}
	}
	return nil
}

// snapshot keeps every series' current value for writeText.
func (r *registry) snapshot() {
	for _, f := range r.fams {
		for _, s := range f.series {
			s.last = s.v
		}
	}
}

// writeText writes the last snapshot in the Prometheus text exposition
// format (0.0.4), every sample stamped t (ms).
func (r *registry) writeText(w io.Writer, t int64) error {
	bw := bufio.NewWriter(w)
	stamp := " " + strconv.FormatInt(t, 10) + "\n"
	for _, f := range r.fams {
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name, f.typ)
		for _, s := range f.series {
			if s.gone || s.dead || t < 0 {
				continue
			}
			bw.WriteString(s.text)
			bw.WriteByte(' ')
			bw.WriteString(strconv.FormatFloat(s.last, 'g', -1, 64))
			bw.WriteString(stamp)
		}
	}
	return bw.Flush()
}

// countCode counts one answer with status code from service.
func (s *Sim) countCode(m map[int]*series, service string, code int) {
	c := m[code]
	if c == nil {
		s.initCodes(m, service, code)
		c = m[code]
	}
	c.v++
}

// initCodes creates the stormctl_server_requests_total series of service
// for codes, at zero: a counter that exists from the start has a rate from
// the start, rather than one extrapolated from its first sample.
func (s *Sim) initCodes(m map[int]*series, service string, codes ...int) {
	for _, code := range codes {
		if m[code] == nil {
			m[code] = s.reg.counter("stormctl_server_requests_total", "Requests answered, by status code.", "service", service, "code", strconv.Itoa(code))
		}
	}
}
