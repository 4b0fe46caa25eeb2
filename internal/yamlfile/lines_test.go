package yamlfile

import (
	"errors"
	"strings"
	"testing"
)

var smallLines = LineLimits{MaxBytes: 64, MaxLine: 20, MaxLines: 4, Doc: small}

func TestLines(t *testing.T) {
	cases := []struct {
		name, src string
		lines     int    // lines read before the error
		pos       string // "line:col" of the error; "" for none
		msg       string
	}{
		{"fine", "{}\n\n[1]\n{\"a\":1}", 3, "", ""},
		{"too deep", "{}\n[[[[[1]]]]]\n", 1, "2:5", "nested more than 4"},
		{"long line", "{}\n\"" + strings.Repeat("x", 30) + "\"\n", 1, "2:21", "line longer than 20 bytes"},
		{"too many lines", "1\n2\n3\n4\n5\n", 4, "5:1", "more than 4 lines"},
		{"blank lines count", "\n\n\n\n1\n", 0, "5:1", "more than 4 lines"},
		{"too large", strings.Repeat("[1,1,1,1,1,1,1,1]\n", 4), 3, "4:1", "more than 64 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := 0
			var err error
			for _, e := range Lines(strings.NewReader(c.src), "f.jsonl", smallLines) {
				if e != nil {
					err = e
					break
				}
				n++
			}
			if n != c.lines {
				t.Errorf("read %d lines, want %d", n, c.lines)
			}
			if c.pos == "" {
				if err != nil {
					t.Fatalf("want no error, got %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || !e.Limit || !strings.HasPrefix(e.Error(), "f.jsonl:"+c.pos+": ") || !strings.Contains(e.Msg, c.msg) {
				t.Fatalf("got %v, want f.jsonl:%s: …%s…", err, c.pos, c.msg)
			}
		})
	}
}

func TestDecodeJSONPositions(t *testing.T) {
	var v struct {
		A []int `json:"a"`
	}
	cases := []struct{ src, want string }{
		{"{\n  \"a\": [1, 2,]\n}", "f.json:2:14: invalid character ']' looking for beginning of value"},
		{"{\n  \"a\": \"x\"\n}", "f.json:2:8: string was used where a sequence is expected"},
		{"{\"a\": [[[[[1]]]]]}", "f.json:1:10: nested more than 4 deep"},
		{"{\"a\": [1, 2.5]}", "f.json:1:11: number was used where an integer is expected"},
		{"{\"é\": 1, \"a\": x}", "f.json:1:15: invalid character 'x' looking for beginning of value"},
	}
	for _, c := range cases {
		err := DecodeJSON("f.json", []byte(c.src), &v, small)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %s", c.src, err, c.want)
		}
	}
	l := Line{No: 7, Data: []byte(`{"a": "x"}`)}
	if err := DecodeLine("f.jsonl", l, &v); err == nil || !strings.HasPrefix(err.Error(), "f.jsonl:7:7: string was used") {
		t.Errorf("DecodeLine: %v", err)
	}
}

// FuzzLines: whatever the bytes, Lines never yields more than the limits
// allow and ends with at most one error.
func FuzzLines(f *testing.F) {
	f.Add("{}\n[[[[[1]]]]]\n")
	f.Add("\"a\nb\"\n{\"a\": &x [*x]}\n")
	f.Add(strings.Repeat("1\n", 10))
	f.Fuzz(func(t *testing.T, s string) {
		n, total, errs := 0, 0, 0
		for l, err := range Lines(strings.NewReader(s), "f", smallLines) {
			if err != nil {
				errs++
				continue
			}
			n++
			total += len(l.Data)
			if len(l.Data) > smallLines.MaxLine || l.No > smallLines.MaxLines {
				t.Fatalf("line %d of %d bytes yielded", l.No, len(l.Data))
			}
			var v any
			_ = DecodeLine("f", l, &v)
		}
		if errs > 1 || n > smallLines.MaxLines || int64(total) > smallLines.MaxBytes {
			t.Fatalf("%d lines, %d bytes, %d errors", n, total, errs)
		}
	})
}
