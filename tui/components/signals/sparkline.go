package signals

import (
	"math"
	"strings"
	"time"

	"github.com/stormctl/stormctl/queries"
)

var bars = []rune("▁▂▃▄▅▆▇█")

// Sparkline draws pts over [start, end] in w cells, each cell the highest
// value of its slice of time (a spike must not vanish between samples).
// Heights run from 0 (or the lowest value, if negative) to the larger of
// the highest value and ceil, so a threshold given as ceil keeps normal
// values low and a breach high. Cells without a finite value are blank:
// missing data is not zero.
func Sparkline(pts []queries.Point, start, end time.Time, w int, ceil float64) string {
	if w <= 0 {
		return ""
	}
	cells := make([]float64, w)
	for i := range cells {
		cells[i] = math.NaN()
	}
	span := end.Sub(start)
	lo, hi := 0.0, ceil
	if math.IsNaN(hi) || math.IsInf(hi, 0) {
		hi = 0
	}
	for _, p := range pts {
		if math.IsNaN(p.V) || math.IsInf(p.V, 0) || p.T.Before(start) || p.T.After(end) {
			continue
		}
		i := w - 1
		if span > 0 {
			i = min(int(float64(w)*float64(p.T.Sub(start))/float64(span)), w-1)
		}
		if math.IsNaN(cells[i]) || p.V > cells[i] {
			cells[i] = p.V
		}
		lo, hi = math.Min(lo, p.V), math.Max(hi, p.V)
	}
	var sb strings.Builder
	sb.Grow(w * 3)
	for _, v := range cells {
		if math.IsNaN(v) {
			sb.WriteByte(' ')
			continue
		}
		level := 0
		if hi > lo {
			level = int(math.Round((v - lo) / (hi - lo) * float64(len(bars)-1)))
		}
		sb.WriteRune(bars[min(max(level, 0), len(bars)-1)])
	}
	return sb.String()
}
