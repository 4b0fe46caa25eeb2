package yamlfile

import "unicode/utf8"

// Check scans data (YAML, or JSON, which is YAML's flow style) once,
// without building anything, and returns an *Error at the first place a
// limit is crossed: nesting deeper than MaxDepth, more than MaxNodes
// values or more than MaxKeys keys in one mapping. It reads the structure
// the way a YAML parser would (quotes, comments, block scalars,
// indentation) but keeps only a stack of open collections, so a hostile
// file costs no more than its own bytes. It reports limits, not syntax:
// a malformed file that stays within them passes, for the parser to name
// its mistake.
func Check(file string, data []byte, lim Limits) error {
	if int64(len(data)) > lim.MaxBytes {
		return tooBig(file, int64(len(data)), lim)
	}
	s := scan{file: file, data: data, lim: lim, line: 1}
	return s.run()
}

// level is one open collection: a block one (at an indentation) or a flow
// one ([ or {).
type level struct {
	indent int
	seq    bool
	flow   bool
	keys   int
}

type scan struct {
	file      string
	data      []byte
	lim       Limits
	i         int // the next byte
	line      int
	lineStart int
	levels    []level
	flow      int // open flow collections, the last of levels
	nodes     int
	// keyed is set once the block segment being read has its key, so that
	// "a: b: c" counts one key.
	keyed bool
	// quotedEnd is where the last quoted scalar ended: JSON's "a":1 is a key.
	quotedEnd int
}

func (s *scan) run() error {
	for s.i < len(s.data) {
		if err := s.lineHead(); err != nil {
			return err
		}
		if err := s.inline(); err != nil {
			return err
		}
	}
	return nil
}

func (s *scan) col(at int) int {
	return utf8.RuneCount(s.data[s.lineStart:at]) + 1
}

func (s *scan) fail(at int, env, format string, args ...any) error {
	return limitErr(s.file, s.line, s.col(at), env, format, args...)
}

func (s *scan) newline() {
	s.i++
	s.line++
	s.lineStart = s.i
}

func (s *scan) peek(at int) byte {
	if at < len(s.data) {
		return s.data[at]
	}
	return 0
}

func blank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == 0 }

func (s *scan) node(at int) error {
	s.nodes++
	if s.nodes > s.lim.MaxNodes {
		return s.fail(at, EnvMaxNodes, "more than %d values; the limit is %d", s.lim.MaxNodes, s.lim.MaxNodes)
	}
	return nil
}

func (s *scan) push(at int, l level) error {
	s.levels = append(s.levels, l)
	if l.flow {
		s.flow++
	}
	if len(s.levels) > s.lim.MaxDepth {
		return s.fail(at, EnvMaxDepth, "nested more than %d deep; the limit is %d", s.lim.MaxDepth, s.lim.MaxDepth)
	}
	return s.node(at)
}

// lineHead reads the indentation and the block indicators ("- ", "? ",
// "key:") that open or continue block collections at the start of a line.
func (s *scan) lineHead() error {
	start := s.i
	for s.i < len(s.data) && s.data[s.i] == ' ' {
		s.i++
	}
	indent := s.i - start
	if s.flow > 0 {
		return nil
	}
	if indent == 0 && s.docMarker() {
		s.levels = s.levels[:0]
		s.i += 3
		return nil
	}
	if indent == 0 && s.peek(s.i) == '%' {
		s.skipLine()
		return nil
	}
	s.keyed = false
	for {
		c := s.peek(s.i)
		if (c == '-' || c == '?') && blank(s.peek(s.i+1)) {
			col := s.i - s.lineStart
			if c == '-' {
				if err := s.blockEntry(col); err != nil {
					return err
				}
			} else if err := s.blockKey(col); err != nil {
				return err
			}
			s.i++
			for s.peek(s.i) == ' ' {
				s.i++
			}
			continue
		}
		return nil
	}
}

func (s *scan) docMarker() bool {
	d := s.data[s.i:]
	return len(d) >= 3 && (string(d[:3]) == "---" || string(d[:3]) == "...") && blank(s.peek(s.i+3))
}

func (s *scan) skipLine() {
	for s.i < len(s.data) && s.data[s.i] != '\n' {
		s.i++
	}
}

// blockEntry is a "- " at column col.
func (s *scan) blockEntry(col int) error {
	for len(s.levels) > 0 && s.top().indent > col {
		s.levels = s.levels[:len(s.levels)-1]
	}
	if len(s.levels) > 0 && s.top().indent == col && s.top().seq {
		return nil
	}
	return s.push(s.i, level{indent: col, seq: true})
}

// blockKey is a mapping key that starts at column col.
func (s *scan) blockKey(col int) error {
	for len(s.levels) > 0 && (s.top().indent > col || s.top().indent == col && s.top().seq) {
		s.levels = s.levels[:len(s.levels)-1]
	}
	if len(s.levels) > 0 && s.top().indent == col {
		t := s.top()
		t.keys++
		if t.keys > s.lim.MaxKeys {
			return s.fail(s.lineStart+col, EnvMaxKeys, "more than %d keys in one mapping; the limit is %d", s.lim.MaxKeys, s.lim.MaxKeys)
		}
		return nil
	}
	return s.push(s.lineStart+col, level{indent: col, keys: 1})
}

func (s *scan) top() *level { return &s.levels[len(s.levels)-1] }

// inline reads the rest of a line (and, inside quotes or flow
// collections, the lines they span) up to and including its newline.
func (s *scan) inline() error {
	segment := s.i - s.lineStart // where this block segment's key would start
	expect := true               // at the start of a value
	for s.i < len(s.data) {
		c := s.data[s.i]
		switch {
		case c == '\n':
			s.newline()
			return nil
		case c == ' ' || c == '\t' || c == '\r':
			s.i++
			if s.peek(s.i) == '#' {
				s.skipLine()
			}
			continue
		case c == '#' && expect:
			s.skipLine()
			continue
		case c == '"' || c == '\'':
			if !expect {
				s.i++
				continue
			}
			if err := s.node(s.i); err != nil {
				return err
			}
			s.quoted(c)
			s.quotedEnd = s.i
			expect = false
			continue
		case c == '[' || c == '{':
			if !expect && s.flow == 0 {
				s.i++
				continue
			}
			if err := s.push(s.i, level{flow: true, seq: c == '['}); err != nil {
				return err
			}
			s.i++
			expect = true
			continue
		case (c == ']' || c == '}') && s.flow > 0:
			s.levels = s.levels[:len(s.levels)-1]
			s.flow--
			s.i++
			expect = false
			continue
		case c == ',' && s.flow > 0:
			s.i++
			expect = true
			continue
		case c == ':' && (blank(s.peek(s.i+1)) || s.flow > 0 && (isFlowInd(s.peek(s.i+1)) || s.quotedEnd == s.i)):
			if err := s.key(segment); err != nil {
				return err
			}
			s.i++
			expect = true
			continue
		case expect && (c == '&' || c == '!'):
			s.word()
			continue
		case expect && c == '*':
			if err := s.node(s.i); err != nil {
				return err
			}
			s.word()
			expect = false
			continue
		case expect && (c == '|' || c == '>') && s.flow == 0:
			if err := s.node(s.i); err != nil {
				return err
			}
			s.skipLine()
			s.blockScalar()
			return nil
		}
		if expect {
			if err := s.node(s.i); err != nil {
				return err
			}
			expect = false
		}
		s.i++
	}
	return nil
}

func isFlowInd(c byte) bool { return c == ',' || c == ']' || c == '}' }

// key is a ": " indicator: in a flow mapping it counts a key; in block
// context it makes the segment's first value a key at its column.
func (s *scan) key(segment int) error {
	if s.flow > 0 {
		t := s.top()
		if t.seq {
			return nil
		}
		t.keys++
		if t.keys > s.lim.MaxKeys {
			return s.fail(s.i, EnvMaxKeys, "more than %d keys in one mapping; the limit is %d", s.lim.MaxKeys, s.lim.MaxKeys)
		}
		return nil
	}
	if s.keyed {
		return nil
	}
	s.keyed = true
	return s.blockKey(segment)
}

// word skips an anchor, tag or alias name.
func (s *scan) word() {
	for s.i < len(s.data) && !blank(s.data[s.i]) && !(s.flow > 0 && (isFlowInd(s.data[s.i]) || s.data[s.i] == '[' || s.data[s.i] == '{')) {
		s.i++
	}
}

// quoted skips a quoted scalar, which may span lines.
func (s *scan) quoted(q byte) {
	s.i++
	for s.i < len(s.data) {
		c := s.data[s.i]
		switch {
		case c == '\n':
			s.newline()
			continue
		case q == '"' && c == '\\':
			s.i += 2
			if s.i-1 < len(s.data) && s.data[s.i-1] == '\n' {
				s.line++
				s.lineStart = s.i
			}
			continue
		case c == q:
			if q == '\'' && s.peek(s.i+1) == '\'' {
				s.i += 2
				continue
			}
			s.i++
			return
		}
		s.i++
	}
}

// blockScalar skips the lines of a literal (|) or folded (>) scalar: the
// blank ones and those indented deeper than the collection it is in.
func (s *scan) blockScalar() {
	parent := -1
	if len(s.levels) > 0 {
		parent = s.top().indent
	}
	for s.i < len(s.data) {
		s.newline()
		j := s.i
		for j < len(s.data) && s.data[j] == ' ' {
			j++
		}
		if j < len(s.data) && s.data[j] != '\n' && s.data[j] != '\r' && j-s.i <= parent {
			return
		}
		if j >= len(s.data) {
			s.i = j
			return
		}
		s.i = j
		s.skipLine()
	}
}
