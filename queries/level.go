package queries

import (
	"fmt"
	"math"
	"sort"
)

// Level is what a series says against its query's threshold, in the one
// order every surface ranks by, least to most severe: no series at all,
// NaN from the server (0/0: nothing ran, no evidence either way), ok,
// warn, crit.
type Level int

// Levels, in increasing order of severity.
const (
	LevelNoData Level = iota
	LevelNaN
	LevelOK
	LevelWarn
	LevelCrit
)

// levelNames are the levels as JSON and tables print them.
var levelNames = [...]string{LevelNoData: "no_data", LevelNaN: "nan", LevelOK: string(OK), LevelWarn: string(Warn), LevelCrit: string(Crit)}

// String is the level's stable name: no_data, nan, ok, warn or crit.
func (l Level) String() string {
	if l < 0 || int(l) >= len(levelNames) {
		return fmt.Sprintf("level(%d)", int(l))
	}
	return levelNames[l]
}

// ParseLevel reads a level's name, e.g. a --fail-on value.
func ParseLevel(s string) (Level, error) {
	for l, name := range levelNames {
		if name == s {
			return Level(l), nil
		}
	}
	return 0, fmt.Errorf("unknown level %q", s)
}

// Breaches reports whether l counts as a breach for a check failing at
// failOn: warn or crit, at or above failOn.
func (l Level) Breaches(failOn Level) bool { return l >= LevelWarn && l >= failOn }

// Level is v's level: Evaluate's status, or LevelNaN for NaN.
func (t Threshold) Level(v float64) Level {
	if math.IsNaN(v) {
		return LevelNaN
	}
	switch t.Evaluate(v) {
	case Crit:
		return LevelCrit
	case Warn:
		return LevelWarn
	}
	return LevelOK
}

// Distance is how far v is past the limit of its level, relative to the
// limit so that queries in different units compare: 0.5 is "half as much
// again as crit". An OK value is measured against warn (or crit) and is
// negative. A limit of 0 ("any") measures in the value's own units.
func (t Threshold) Distance(v float64) float64 {
	if math.IsNaN(v) {
		return math.Inf(-1)
	}
	limit := t.Warn
	if t.Evaluate(v) == Crit || limit == nil {
		limit = t.Crit
	}
	if limit == nil {
		return 0
	}
	d := v - *limit
	if t.Direction == Below {
		d = -d
	}
	if *limit != 0 {
		d /= math.Abs(*limit)
	}
	return d
}

// Worse reports whether value a ranks before b: a more severe level, then
// further past its limit.
func (t Threshold) Worse(a, b float64) bool { return t.WorseThan(a, t, b) }

// WorseThan is Worse across two queries: v against t ranks before w
// against u by level, then by relative distance past the limit.
func (t Threshold) WorseThan(v float64, u Threshold, w float64) bool {
	if lv, lw := t.Level(v), u.Level(w); lv != lw {
		return lv > lw
	}
	return t.Distance(v) > u.Distance(w)
}

// SortWorst orders series worst first (Worse), ties by their labels'
// service, dependency and pool, so the order is stable across refreshes.
func SortWorst(t Threshold, ss []Series) {
	sort.SliceStable(ss, func(i, j int) bool {
		a, b := ss[i], ss[j]
		if t.Worse(a.Value, b.Value) {
			return true
		}
		if t.Worse(b.Value, a.Value) {
			return false
		}
		for _, l := range labelParams {
			if a.Labels[l] != b.Labels[l] {
				return a.Labels[l] < b.Labels[l]
			}
		}
		return false
	})
}

// SeriesLevel is one series of a result and its level: now (the instant
// value, or a range's last point) and, for a threshold with for:, the
// level it held over the whole window.
type SeriesLevel struct {
	Series Series
	Value  float64
	Level  Level
	// Held is the level held over the for: window, asked only of series at
	// warn or crit now (Sustained says it was); it equals Level otherwise.
	Held      Level
	Sustained bool
}

// Counts is the level a check counts: the lower of now and held.
func (s SeriesLevel) Counts() Level { return min(s.Level, s.Held) }

// Evaluation is one result read against its threshold: each series'
// level and the result's, its worst series (LevelNoData with none).
type Evaluation struct {
	Level  Level
	Series []SeriesLevel
}

// EvaluateResult reads res against t. sustained, when not nil, is the result of
// the threshold's for: window (Rendered.Sustained): a series at warn or
// crit now holds the level its sustained value has, or ok when it has no
// sustained value. A sustained result that failed holds nothing back.
func (t Threshold) EvaluateResult(res Result, sustained *Result) Evaluation {
	var held map[string]Level
	if sustained != nil && sustained.Err == nil {
		held = map[string]Level{}
		for _, s := range sustained.Series {
			held[s.Key()] = t.Level(s.Value)
		}
	}
	ev := Evaluation{Level: LevelNoData}
	for _, s := range res.Series {
		v := s.Value
		if len(s.Points) > 0 {
			v = s.Points[len(s.Points)-1].V
		}
		sl := SeriesLevel{Series: s, Value: v, Level: t.Level(v)}
		sl.Held = sl.Level
		if held != nil && sl.Level >= LevelWarn {
			sl.Held, sl.Sustained = LevelOK, true
			if h, ok := held[s.Key()]; ok {
				sl.Held = h
			}
		}
		ev.Level = max(ev.Level, sl.Level)
		ev.Series = append(ev.Series, sl)
	}
	return ev
}

// Breaches reports whether any series counts as a breach at failOn.
func (e Evaluation) Breaches(failOn Level) bool {
	for _, s := range e.Series {
		if s.Counts().Breaches(failOn) {
			return true
		}
	}
	return false
}

// Breaches reports whether the fleet's counts hold a breach at failOn:
// any series past crit, or past warn when failOn is warn.
func (r FleetResult) Breaches(failOn Level) bool {
	n := max(r.Crit, 0)
	if failOn <= LevelWarn {
		n += max(r.Warn, 0)
	}
	return n > 0
}
