package queries

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/stormctl/stormctl/internal/config"
)

// Defaults for the caps on one Prometheus answer. The fleet view asks for
// at most MaxTop worst series plus a few counts, with an hour of history
// each: well under both.
const (
	DefaultMaxBytes  = 16 << 20
	DefaultMaxSeries = 4 * MaxTop
)

// CutPrefix starts the warning added to an answer that was cut at a cap.
const CutPrefix = "stormctl cut this answer"

// CutWarning returns the warning of warns that says the answer was cut at
// a cap, "" when it was whole.
func CutWarning(warns []string) string {
	for _, w := range warns {
		if strings.HasPrefix(w, CutPrefix) {
			return w
		}
	}
	return ""
}

// Limits bound what a client holds of one answer: its raw bytes, and its
// series (or label values, or label names). Zero fields take the defaults.
type Limits struct {
	MaxBytes  int64
	MaxSeries int
}

// LimitsOf reads a context's prometheus.limits.
func LimitsOf(l config.PrometheusLimits) Limits {
	out := Limits{MaxBytes: l.MaxBytes, MaxSeries: l.MaxSeries}
	if out.MaxBytes <= 0 {
		out.MaxBytes = DefaultMaxBytes
	}
	if out.MaxSeries <= 0 {
		out.MaxSeries = DefaultMaxSeries
	}
	return out
}

// LimitError is an answer past a cap with nothing useful before it: the
// cap was reached before the first complete series, or outside the list.
type LimitError struct {
	Limit string // "max-bytes" or "max-series"
	Value int64
	Kept  int // complete series read before the cap
}

func (e *LimitError) Error() string {
	what := fmt.Sprintf("more than %s", sizeOf(e.Value))
	switch e.Limit {
	case "max-series":
		what = fmt.Sprintf("more than %d series", e.Value)
	case LimitBudget:
		return fmt.Sprintf("the answer does not fit %s, not read past it after %d complete series", budgetText(e.Value), e.Kept)
	}
	return fmt.Sprintf("the answer holds %s (prometheus.limits.%s), not read past it after %d complete series", what, e.Limit, e.Kept)
}

const hintLimit = "use --top or a narrower selector, or raise the limit in the context"

// hintBudget is the way out of the shared budget: ask for less at once.
const hintBudget = "use --service, --top or a narrower selector"

// cutMessage is the warning added to an answer cut after kept series.
func cutMessage(address, limit string, value int64, kept int) string {
	what, why, hint := sizeOf(value), "prometheus.limits."+limit, hintLimit
	switch limit {
	case "max-series":
		what = fmt.Sprintf("%d series", value)
	case LimitBudget:
		what, why, hint = budgetText(value), "this process's memory budget", hintBudget
	}
	return fmt.Sprintf("%s at %s (%s): %s sent more, only the first %d series are kept; %s",
		CutPrefix, what, why, address, kept, hint)
}

func sizeOf(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// limitTransport caps every successful answer's body (see capReader);
// error bodies are capped by bytes alone.
type limitTransport struct {
	next    http.RoundTripper
	limits  Limits
	address string
	budget  *atomic.Pointer[Budget] // nil: none
}

func (t *limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	list := listNone
	switch p := req.URL.Path; {
	case resp.StatusCode/100 != 2:
	case strings.HasSuffix(p, "/api/v1/query"), strings.HasSuffix(p, "/api/v1/query_range"):
		list = listResult
	case strings.HasSuffix(p, "/api/v1/series"), strings.HasSuffix(p, "/api/v1/labels"), strings.HasSuffix(p, "/values"):
		list = listData
	}
	ch, own := chargeOf(req.Context(), t.budget)
	resp.Body = &capReader{src: resp.Body, limits: t.limits, address: t.address, list: list, charge: ch, ownCharge: own}
	resp.ContentLength = -1
	return resp, nil
}

// Where the list of an answer sits in its JSON.
const (
	listNone   = iota // no list is cut: bytes only
	listResult        // {"data": {"resultType": ..., "result": [ ... ]}}
	listData          // {"data": [ ... ]}
)

// capReader passes a JSON answer through while scanning it byte by byte,
// never holding more than one element of its list beyond what it has
// passed on. Past MaxSeries elements, or past MaxBytes within the list
// after at least one complete element, it ends the list and the answer
// with a warning that says so, and stops reading: the decoder sees a
// valid, shorter answer. Past MaxBytes anywhere else it fails with a
// *LimitError.
type capReader struct {
	src     io.ReadCloser
	limits  Limits
	address string
	list    int

	read  int64  // raw bytes scanned
	pend  []byte // scanned, not yet passed on
	ready int    // pend[:ready] may be passed on
	tail  []byte // the synthesized end of a cut answer
	err   error  // returned once pend and tail are drained
	buf   []byte // pend's own buffer while it holds no large element

	sc scanState

	charge    *charge // the shared budget's share; nil: none
	ownCharge bool    // released on Close (a call outside the runner)
}

// scanState follows the JSON structure as far as cutting needs: the keys
// at depths 1 and 2, and where the list's elements end.
type scanState struct {
	depth     int
	inString  bool
	escape    bool
	obj       [3]bool // the container at depths 1–2 is an object
	expectKey [3]bool // an object key comes next, at depths 1–2
	isKey     bool    // the current string is a key at depth 1–2
	key       []byte  // the current key, capped
	keys      [3]string
	sawType   bool // data.resultType came before the list
	listDepth int  // depth inside the list; 0 outside
	listDone  bool
	inElement bool
	kept      int // complete elements in the list
	lastEnd   int // index in pend after the last complete element
}

func (r *capReader) Read(p []byte) (int, error) {
	for {
		if r.ready > 0 {
			n := copy(p, r.pend[:r.ready])
			r.pend = r.pend[n:]
			r.ready -= n
			r.sc.lastEnd -= n
			return n, nil
		}
		if len(r.tail) > 0 {
			n := copy(p, r.tail)
			r.tail = r.tail[n:]
			return n, nil
		}
		if r.err != nil {
			return 0, r.err
		}
		r.fill()
	}
}

func (r *capReader) Close() error {
	if r.ownCharge {
		r.charge.release()
	}
	return r.src.Close()
}

// chunk is how much fill reads at once.
const chunk = 32 << 10

// fill reads one chunk into pend and scans it.
func (r *capReader) fill() {
	if len(r.pend) == 0 {
		if r.buf == nil {
			r.buf = make([]byte, 0, 2*chunk)
		}
		r.pend, r.sc.lastEnd = r.buf[:0], 0 // let a large element's buffer go
	}
	r.pend = slices.Grow(r.pend, chunk)
	start := len(r.pend)
	n, err := r.src.Read(r.pend[start : start+chunk])
	over, spent := false, false
	if left := r.limits.MaxBytes - r.read; int64(n) > left {
		n, over = int(left), true
	}
	if r.charge != nil && n > 0 && !r.charge.take(int64(n)) {
		n, spent = 0, true
	}
	r.read += int64(n)
	r.pend = r.pend[:start+n]
	if r.scanFrom(start) {
		return
	}
	if spent {
		r.cut(LimitBudget, r.charge.b.Max)
		return
	}
	if over {
		r.cut("max-bytes", r.limits.MaxBytes)
		return
	}
	if r.sc.listDepth == 0 {
		r.ready = len(r.pend)
	}
	if err != nil {
		r.ready, r.err = len(r.pend), err
	}
}

// structural are the bytes that matter inside a list element, outside a
// string.
var structural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}

// scanFrom scans pend[i:], skipping the insides of strings and of list
// elements in bulk; true when the answer was cut.
func (r *capReader) scanFrom(i int) bool {
	s := &r.sc
	for ; i < len(r.pend); i++ {
		switch {
		case s.inString && !s.isKey && !s.escape:
			rest := r.pend[i:]
			q := bytes.IndexByte(rest, '"')
			if q < 0 {
				q = len(rest)
			}
			if e := bytes.IndexByte(rest[:q], '\\'); e >= 0 {
				q = e
			}
			i += q
		case !s.inString && s.listDepth >= 2:
			for i < len(r.pend) && !structural[r.pend[i]] {
				i++
			}
		}
		if i == len(r.pend) {
			return false
		}
		if r.scan(i) {
			return true
		}
	}
	return false
}

// scan follows pend[i]; true when the answer was cut there.
func (r *capReader) scan(i int) bool {
	s, b := &r.sc, r.pend[i]
	if s.inString {
		switch {
		case s.escape:
			s.escape = false
		case b == '\\':
			s.escape = true
		case b == '"':
			s.inString = false
			if s.isKey {
				s.keys[s.depth] = string(s.key)
				s.sawType = s.sawType || s.depth == 2 && s.keys[1] == "data" && s.keys[2] == "resultType"
			}
		default:
			if s.isKey && len(s.key) < 16 {
				s.key = append(s.key, b)
			}
		}
		return false
	}
	inList := s.listDepth > 0
	if inList && s.listDepth == 1 && (b == ',' || b == ']') && s.inElement {
		s.inElement = false
		s.kept++
		s.lastEnd, r.ready = i, i
		if b == ',' && s.kept >= r.limits.MaxSeries {
			r.cut("max-series", int64(r.limits.MaxSeries))
			return true
		}
	}
	switch b {
	case ' ', '\t', '\n', '\r', ':':
	case ',':
		if !inList && s.depth > 0 && s.depth < len(s.obj) {
			s.expectKey[s.depth] = s.obj[s.depth]
		}
	case '{', '[':
		if inList {
			s.listDepth++
			s.inElement = true
			break
		}
		s.depth++
		if s.depth < len(s.keys) {
			s.keys[s.depth] = ""
			s.obj[s.depth], s.expectKey[s.depth] = b == '{', b == '{'
		}
		if b == '[' && r.isList() {
			s.listDepth = 1
			s.lastEnd, r.ready = i+1, i+1
		}
	case '}', ']':
		if !inList {
			s.depth = max(s.depth-1, 0) // malformed: the decoder will say so
			break
		}
		if s.listDepth--; s.listDepth == 0 {
			s.listDone = true
			s.depth--
		}
	case '"':
		s.inString = true
		s.isKey = !inList && s.depth > 0 && s.depth < len(s.keys) && s.expectKey[s.depth]
		if s.isKey {
			s.expectKey[s.depth] = false
			s.key = s.key[:0]
		}
		if s.listDepth == 1 {
			s.inElement = true
		}
	default:
		if s.listDepth == 1 {
			s.inElement = true // a number, true, false or null
		}
	}
	return false
}

// isList reports whether a '[' just opened (at s.depth) is the answer's
// list: data.result, or data itself.
func (r *capReader) isList() bool {
	s := &r.sc
	if s.listDone {
		return false
	}
	switch r.list {
	case listResult:
		return s.depth == 3 && s.keys[1] == "data" && s.keys[2] == "result"
	case listData:
		return s.depth == 2 && s.keys[1] == "data"
	}
	return false
}

// cut ends the answer after its last complete element with a warning, or
// fails with a *LimitError when that would say nothing: no complete
// element, the cap outside the list, or a result list whose type was not
// given before it.
func (r *capReader) cut(limit string, value int64) {
	s := &r.sc
	r.src.Close()
	canCut := s.listDepth > 0 && s.kept > 0 && (r.list == listData || s.sawType)
	if !canCut {
		r.pend, r.ready = nil, 0
		r.err = &LimitError{Limit: limit, Value: value, Kept: s.kept}
		return
	}
	r.pend = r.pend[:s.lastEnd]
	r.ready = len(r.pend)
	msg, _ := json.Marshal(cutMessage(r.address, limit, value, s.kept))
	end := "]"
	if r.list == listResult {
		end = "]}"
	}
	r.tail = []byte(end + `,"status":"success","warnings":[` + string(msg) + "]}")
	r.err = io.EOF
}
