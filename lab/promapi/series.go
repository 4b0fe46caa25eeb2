package promapi

import (
	"math"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

const minInt64 = math.MinInt64

// sameValue reports whether a re-sent sample repeats the stored one; NaNs
// (staleness markers among them) compare by their bits.
func sameValue(a, b float64) bool {
	return a == b || math.Float64bits(a) == math.Float64bits(b)
}

// fsample is one float sample; *fsample is a chunks.Sample, so the store's
// slices are iterated by Prometheus's own list iterator without copying.
type fsample struct {
	t int64
	f float64
}

func (s *fsample) T() int64                      { return s.t }
func (s *fsample) ST() int64                     { return 0 }
func (s *fsample) F() float64                    { return s.f }
func (s *fsample) H() *histogram.Histogram       { return nil }
func (s *fsample) FH() *histogram.FloatHistogram { return nil }
func (s *fsample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s *fsample) Copy() chunks.Sample           { c := *s; return &c }

// fsamples is a series' samples in time order.
type fsamples []fsample

func (ss fsamples) Get(i int) chunks.Sample { return &ss[i] }
func (ss fsamples) Len() int                { return len(ss) }

// seriesSet iterates a Select result.
type seriesSet struct {
	list []*memSeries
	i    int
}

func (s *seriesSet) Next() bool {
	s.i++
	return s.i < len(s.list)
}
func (s *seriesSet) At() storage.Series                { return s.list[s.i] }
func (s *seriesSet) Err() error                        { return nil }
func (s *seriesSet) Warnings() annotations.Annotations { return nil }

// Labels and Iterator make a Select result's memSeries a storage.Series.
func (ms *memSeries) Labels() labels.Labels { return ms.lset }

// Iterator reuses it when it is a list iterator of an earlier series.
func (ms *memSeries) Iterator(it chunkenc.Iterator) chunkenc.Iterator {
	if r, ok := it.(interface{ Reset(storage.Samples) }); ok {
		r.Reset(ms.samples)
		return it
	}
	return storage.NewListSeriesIterator(ms.samples)
}
