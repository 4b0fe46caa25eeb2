package journal

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/sanitize"
)

// Chart geometry, in SVG user units (the viewBox); CSS scales it.
const (
	svgW, svgH      = 960, 220
	padL, padR      = 150, 12
	padT, padB      = 10, 24
	laneRowH        = 26
	maxSeriesColors = 6
)

// timeScale maps times of the window onto the plot's x axis.
type timeScale struct{ from, to time.Time }

func (s timeScale) x(t time.Time) float64 {
	span := s.to.Sub(s.from).Seconds()
	if span <= 0 {
		return padL
	}
	f := math.Min(math.Max(t.Sub(s.from).Seconds()/span, 0), 1)
	return padL + f*(svgW-padL-padR)
}

type svgTick struct {
	Pos   float64
	Label string
}

// ticks are about six round times across the window.
func (s timeScale) ticks() []svgTick {
	span := s.to.Sub(s.from)
	step := time.Minute
	for _, d := range []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute,
		30 * time.Minute, time.Hour, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour} {
		step = d
		if span/d <= 8 {
			break
		}
	}
	if span/step > 8 { // a record spanning years: whole days
		step = (span / 8).Truncate(24 * time.Hour)
	}
	var out []svgTick
	for t := s.from.Truncate(step); !t.After(s.to); t = t.Add(step) {
		if t.Before(s.from) {
			continue
		}
		out = append(out, svgTick{Pos: s.x(t), Label: t.UTC().Format("15:04")})
	}
	return out
}

type svgPath struct {
	Class, Name, D string
}

type svgLine struct {
	Y, LabelY    float64
	Label, Class string
}

type svgMarker struct {
	X            float64
	Class, Title string
}

type svgChart struct {
	Chart
	Paths   []svgPath
	Lines   []svgLine
	XTicks  []svgTick
	YTicks  []svgTick
	Markers []svgMarker
	Bottom  float64 // y of the x axis
}

// drawChart lays c out over the window, with one marker per entry.
func drawChart(c Chart, sc timeScale, markers []svgMarker) svgChart {
	out := svgChart{Chart: c, XTicks: sc.ticks(), Markers: markers, Bottom: svgH - padB}
	top := 0.0
	for _, s := range c.Series {
		for _, p := range s.Points {
			if !math.IsNaN(p.V) && !math.IsInf(p.V, 0) {
				top = math.Max(top, p.V)
			}
		}
	}
	for _, l := range c.Lines {
		top = math.Max(top, l.Value)
	}
	top = niceCeil(top * 1.1)
	y := func(v float64) float64 {
		return padT + (1-math.Min(math.Max(v/top, 0), 1))*(svgH-padT-padB)
	}
	for i, s := range c.Series {
		out.Paths = append(out.Paths, svgPath{Class: "s" + strconv.Itoa(i%maxSeriesColors), Name: s.Name, D: pathData(s.Points, sc, y)})
	}
	for _, l := range c.Lines {
		// The worse threshold is labelled on the bad side of its line, the
		// other on the good side, so close thresholds do not overprint.
		ly := y(l.Value) - 3
		if (l.Label == "warn") != c.Below {
			ly = y(l.Value) + 10
		}
		out.Lines = append(out.Lines, svgLine{Y: y(l.Value), LabelY: ly, Label: l.Label + " " + formatNum(l.Value), Class: "th-" + l.Label})
	}
	for _, v := range []float64{0, top / 2, top} {
		out.YTicks = append(out.YTicks, svgTick{Pos: y(v), Label: formatNum(v)})
	}
	return out
}

// pathData is "M x y L x y …", starting a new subpath after each gap (NaN)
// so missing data is not drawn as a line.
func pathData(pts []ChartPoint, sc timeScale, y func(float64) float64) string {
	var b strings.Builder
	pen := false
	for _, p := range pts {
		if math.IsNaN(p.V) || math.IsInf(p.V, 0) {
			pen = false
			continue
		}
		if pen {
			b.WriteString(" L")
		} else {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteByte('M')
		}
		pen = true
		b.WriteString(strconv.FormatFloat(sc.x(p.T), 'f', 1, 64))
		b.WriteByte(' ')
		b.WriteString(strconv.FormatFloat(y(p.V), 'f', 1, 64))
	}
	return b.String()
}

// niceCeil rounds v up to a round number (1, 1.2, 1.5, 2, 2.5, 3, 4, 5,
// 6 or 8 times a power of ten), so the axis reads easily; 1 for v ≤ 0.
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if v <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

func formatNum(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }

// markersFor places one marker per entry.
func markersFor(entries []Entry, sc timeScale) []svgMarker {
	out := make([]svgMarker, len(entries))
	for i, e := range entries {
		out[i] = svgMarker{X: sc.x(e.Time), Class: eventClass(e.Event), Title: markerTitle(e)}
	}
	return out
}

// eventClass groups events for colour: applied, ended, refused, playbook, other.
func eventClass(ev Event) string {
	switch ev {
	case ActionApplied, ActionExtended:
		return "ev-applied"
	case ActionReleased, ActionExpired:
		return "ev-ended"
	case ActionRefused:
		return "ev-refused"
	case PlaybookStarted, PlaybookPassed, PlaybookFailed, PlaybookSkipped, PlaybookFinished:
		return "ev-playbook"
	}
	return "ev-other"
}

// markerTitle is the tooltip: time, event, actor (and Redis user), the
// lever and the reason.
func markerTitle(e Entry) string {
	parts := []string{e.Time.UTC().Format("15:04:05"), string(e.Event), "by " + actorText(e)}
	if e.Kind != "" {
		parts = append(parts, strings.TrimSpace(e.Kind+" "+e.Value+" on "+e.Target))
	}
	if e.Step != "" && e.Step != AdHoc {
		parts = append(parts, "step "+e.Step)
	}
	if e.Reason != "" {
		parts = append(parts, "reason: "+e.Reason)
	}
	return strings.Join(parts, " · ")
}

type laneBar struct {
	X, W, Y      float64
	Class, Title string
	Label        string
}

// laneRow is one lever's row, labelled with its kind over its target.
type laneRow struct {
	Pos          float64 // y of the row's middle
	Kind, Target string
	Full         string
}

type svgLane struct {
	Rows   []laneRow
	Bars   []laneBar
	XTicks []svgTick
	Height float64
	Bottom float64
}

// drawLane is the Gantt of lever lifetimes: one row per lever.
func drawLane(spans []LeverSpan, sc timeScale) svgLane {
	row := map[string]int{}
	var out svgLane
	for _, s := range spans {
		i, ok := row[s.Lever()]
		if !ok {
			i = len(out.Rows)
			row[s.Lever()] = i
			out.Rows = append(out.Rows, laneRow{Pos: float64(padT + i*laneRowH + laneRowH/2), Kind: s.Kind,
				Target: sanitize.Clip(s.Target, 26), Full: s.Lever()}) // the full text is in the bar's title
		}
		x0, x1 := sc.x(s.From), sc.x(s.To)
		title := s.Value + " by " + s.Actor + " (action " + s.ActionID + "), " + s.From.UTC().Format("15:04:05") + " to " +
			s.To.UTC().Format("15:04:05") + ", " + s.End
		if s.Reason != "" {
			title += "; reason: " + s.Reason
		}
		out.Bars = append(out.Bars, laneBar{X: x0, W: math.Max(x1-x0, 2), Y: float64(padT + i*laneRowH + 4),
			Class: "end-" + s.End, Title: title, Label: s.Value})
	}
	out.Bottom = float64(padT + len(out.Rows)*laneRowH)
	out.Height = out.Bottom + padB
	out.XTicks = sc.ticks()
	return out
}
