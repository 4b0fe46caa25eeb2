package alerts

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Decode never panics, and every error is a refusal with its reason.
func FuzzDecode(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join("testdata", "webhook-v4-firing.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"version":"4","groupKey":"k","alerts":[{"status":"firing"}]}`))
	f.Add([]byte(`{"version":"4"} trailing`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := Decode(body, Limits{MaxBody: 64 << 10, MaxAlerts: 50})
		var ref *RefusedError
		if err != nil && !errors.As(err, &ref) {
			t.Fatalf("error %v is not a *RefusedError", err)
		}
		if err == nil && (m.Version != "4" || m.GroupKey == "" || len(m.Alerts) > 50) {
			t.Fatalf("accepted %+v", m)
		}
	})
}
