package flagd_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/flags/flagd"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lever"
)

// TestOFREPHostileBodies: request bodies past the input limits every
// stormctl parser shares are refused with 400 INVALID_CONTEXT naming the
// limit and where in the body it was reached, quickly and without the
// server holding more than the body, and the server answers normally after.
func TestOFREPHostileBodies(t *testing.T) {
	e := startEnv(t, flagd.Options{})
	e.w.set(t, lever.Shed, "search", "20", time.Hour)
	url := "http://" + e.srv.Addr("ofrep") + "/ofrep/v1/evaluate/flags/" + lever.ShedPercent
	good := `{"context":{"targetingKey":"t","service":"search"}}`
	eventually(t, 5*time.Second, "OFREP serving the lever", func() bool {
		code, _, body := post(t, url, good, nil)
		return code == http.StatusOK && strings.Contains(body, `"value":20`)
	})

	var keys strings.Builder
	for i := range 2500 {
		fmt.Fprintf(&keys, `"k%d":1,`, i)
	}
	cases := []struct {
		name, body string
		want       string // a pattern in errorDetails
	}{
		// 60 KB of brackets: within the size limit, 30,000 deep.
		{"deep", `{"context":{"a":` + strings.Repeat("[", 30000) + strings.Repeat("]", 30000) + `}}`,
			`request body:1:79: nested more than 64 deep`},
		{"huge", `{"context":{"a":"` + strings.Repeat("x", 8<<20) + `"}}`,
			`request body: file is more than 64 KiB; the limit is 64 KiB`},
		{"many keys", `{"context":{` + strings.TrimSuffix(keys.String(), ",") + `}}`,
			`request body:1:\d+: more than 2000 keys in one mapping`},
		{"bulk deep", `{"context":` + strings.Repeat(`{"a":`, 100) + `1` + strings.Repeat("}", 101),
			`request body:1:\d+: nested more than 64 deep`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			target := url
			if strings.HasPrefix(c.name, "bulk") {
				target = strings.TrimSuffix(url, "/"+lever.ShedPercent)
			}
			var code int
			var body string
			start := time.Now()
			heap, cpu := testenv.PeakHeap(t, func() { code, _, body = post(t, target, c.body, nil) })
			took := time.Since(start)
			t.Logf("%d bytes: %d in %v, peak heap +%d KB, CPU %v", len(c.body), code, took.Round(time.Millisecond), heap>>10, cpu.Round(time.Millisecond))
			if code != http.StatusBadRequest || !strings.Contains(body, "INVALID_CONTEXT") || !regexp.MustCompile(c.want).MatchString(body) {
				t.Fatalf("%d %s, want 400 INVALID_CONTEXT %q", code, clipped(body), c.want)
			}
			if strings.Contains(body, "STORMCTL_MAX_INPUT") {
				t.Errorf("the client is told of a server setting: %s", body)
			}
			// The client builds the 8 MB body too; the server holds at most
			// 64 KiB of it.
			if limit := uint64(len(c.body)) + 4<<20; heap > limit {
				t.Errorf("peak heap grew %d KB, want at most %d KB", heap>>10, limit>>10)
			}
			if took > 5*time.Second {
				t.Errorf("took %v", took)
			}
		})
	}
	if code, _, body := post(t, url, good, nil); code != http.StatusOK || !strings.Contains(body, `"value":20`) {
		t.Fatalf("after the hostile bodies: %d %s", code, body)
	}
}

func clipped(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
