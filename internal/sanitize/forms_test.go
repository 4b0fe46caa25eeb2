package sanitize

import "testing"

func TestMask(t *testing.T) {
	for in, want := range map[string]string{
		"svc-0042":             "svc-0042",
		"a\x1b[31mred\x1b[0m":  "a\uFFFD[31mred\uFFFD[0m",
		"two\nlines\r\t":       "two\uFFFDlines\uFFFD\uFFFD",
		"outbound|8080||a.b.c": "outbound|8080||a.b.c",
		"\u009b2J":             "\uFFFD2J", // C1 CSI
		"a\u202eb\u2028c":      "a\uFFFDb\uFFFDc",
		"bad \xff utf8":        "bad \uFFFD utf8",
		"real \uFFFD stays":    "real \uFFFD stays",
	} {
		if got := Mask(in, '\uFFFD'); got != want {
			t.Errorf("Mask(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Mask("gate\x1b[2Jway\xff", '?'); got != "gate?[2Jway?" {
		t.Errorf("Mask with ?: %q", got)
	}
}

func TestHTMLText(t *testing.T) {
	for in, want := range map[string]string{
		"plain\ttab\nline": "plain\ttab\nline",
		"\x1b[31mred":      `\x1b[31mred`,
		"a\u202eb\u0085c":  `a\u202eb\u0085c`,
		"bad \xff utf8\r":  "bad \uFFFD utf8\\x0d",
		"del\x7f":          `del\x7f`,
		"sep\u2029":        `sep\u2029`,
	} {
		if got := HTMLText(in); got != want {
			t.Errorf("HTMLText(%q) = %q, want %q", in, got, want)
		}
	}
}
