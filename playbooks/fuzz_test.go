package playbooks

import (
	"math"
	"testing"
)

func nan() float64 { return math.NaN() }

// FuzzLoad feeds arbitrary bytes to the loader: it must return a playbook
// or positioned errors, never panic.
func FuzzLoad(f *testing.F) {
	entries, err := builtinFS.ReadDir("builtin")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		data, _ := builtinFS.ReadFile("builtin/" + e.Name())
		f.Add(data)
	}
	for _, s := range []string{
		"", "{}", "steps: [", "apiVersion: stormctl/v1\nkind: Playbook\nname: x\ntitle: t\nsteps:\n  - ~\n",
		"steps:\n  - id: a\n    type: action\n    rollback: a\n    requires: [a]\n",
		"steps:\n  - id: a\n    type: wait\n    timeout: -5m\n    every: 0s\n    for: 99999h\n",
		"parameters:\n  - name: p\n    pattern: '(a'\nsteps:\n  - id: a\n    type: note\n    text: '{{ .params.p }} {{'\n",
		"steps:\n  - id: a\n    type: check\n    params: {\"a.b[0]\": x, window: 0s}\n    when: {passed: a, failed: a}\n",
	} {
		f.Add([]byte(s))
	}
	cat := catalog(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		pb, err := Parse("fuzz.yaml", data, cat)
		if (pb == nil) == (err == nil) {
			t.Fatalf("want a playbook or an error, got %v and %v", pb, err)
		}
		if err != nil && err.Error() == "" {
			t.Fatal("empty error")
		}
	})
}
