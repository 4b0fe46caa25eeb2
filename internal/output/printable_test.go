package output

import "testing"

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"svc-0042":             "svc-0042",
		"a\x1b[31mred\x1b[0m":  "a\uFFFD[31mred\uFFFD[0m",
		"two\nlines\r\t":       "two\uFFFDlines\uFFFD\uFFFD",
		"outbound|8080||a.b.c": "outbound|8080||a.b.c",
		"\u009b2J":             "\uFFFD2J", // C1 CSI
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}
