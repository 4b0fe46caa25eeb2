package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// readmeKey is one thing the README's storm steps tell the reader to do
// in the dashboard: a key for tmux send-keys, or text to type.
type readmeKey struct {
	keys []string // tmux key names
	text string   // typed literally
	// enter is the Enter's position among the step's Enters (1, 2, …), 0
	// for anything else: what the screen must show next depends on it.
	enter int
}

var readmeWords = map[string]int{"once": 1, "twice": 2, "three times": 3, "four times": 4}

// readmeStormKeys reads step 2 of "The storm, step by step" in README.md
// — from "`tab`" up to the paragraph on refusals — and returns its
// keystrokes in order, so the end-to-end test presses what the README
// says, not what the test's author remembered.
func readmeStormKeys(t *testing.T) []readmeKey {
	t.Helper()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	i := strings.Index(s, "2. `tab` `tab` to the playbook")
	if i < 0 {
		t.Fatal("README.md: step 2 of the storm (\"2. `tab` `tab` to the playbook\") not found")
	}
	step := s[i+len("2. "):]
	if j := strings.Index(step, "\n3. "); j >= 0 {
		step = step[:j]
	}
	if j := strings.Index(step, "If the evidence guard refuses"); j >= 0 {
		step = step[:j]
	}
	step = strings.Join(strings.Fields(step), " ")
	tok := regexp.MustCompile("`tab`|`↓` (once|twice|three times|four times)|type `([^`]+)`|Enter")
	var out []readmeKey
	enters := 0
	for _, m := range tok.FindAllStringSubmatch(step, -1) {
		switch {
		case m[0] == "`tab`":
			out = append(out, readmeKey{keys: []string{"Tab"}})
		case m[1] != "":
			var downs []string
			for range readmeWords[m[1]] {
				downs = append(downs, "Down")
			}
			out = append(out, readmeKey{keys: downs})
		case m[2] != "":
			out = append(out, readmeKey{text: m[2]})
		default:
			enters++
			out = append(out, readmeKey{keys: []string{"Enter"}, enter: enters})
		}
	}
	if enters < 3 {
		t.Fatalf("README.md step 2 reads as %d Enters, want run the check, open the plan, confirm: %q", enters, step)
	}
	return out
}

// The README's step 2 reads as the keys the dashboard needs.
func TestReadmeStormKeys(t *testing.T) {
	var got []string
	for _, k := range readmeStormKeys(t) {
		if k.text != "" {
			got = append(got, "'"+k.text+"'")
		}
		got = append(got, k.keys...)
	}
	want := "Tab Tab Enter Enter Down Down Down Down Enter Down Enter 'checkout->payment-gateway' Enter Enter"
	if strings.Join(got, " ") != want {
		t.Fatalf("README.md step 2 reads as\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
}
