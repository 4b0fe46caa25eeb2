package journal

import (
	"bytes"
	"encoding/json"
	"iter"
	"strings"
	"testing"
	"time"
)

// The Markdown timeline says what an actuator changed in the cluster, and
// what the cluster said back cannot drive a terminal or break the table.
func TestMarkdownShowsActuations(t *testing.T) {
	e := Entry{ID: "01A", Time: time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC), Event: ActuationConflict,
		Actor: "actuator-kubernetes/a1", Kind: "autoscaling", Target: "checkout", Value: "frozen",
		Object: "hpa/checkout in shop", Outcome: "conflict",
		Changes: []FieldChange{{Path: "/spec/behavior", Before: "\"Max\u009b31m|\"", After: "null"}}}
	data, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	recs := iter.Seq2[Record, error](func(yield func(Record, error) bool) { yield(Record{Pos: "1-0", Data: data}, nil) })
	f, err := ParseFormat("md")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := Export(&out, f, recs, Filter{}); err != nil {
		t.Fatal(err)
	}
	md := out.String()
	for _, want := range []string{"**cluster conflict** autoscaling `frozen` on `checkout`: hpa/checkout in shop",
		`/spec/behavior: "Max\u009b31m\|" → null`} {
		if !strings.Contains(md, want) {
			t.Errorf("timeline lacks %q:\n%s", want, md)
		}
	}
	if strings.ContainsRune(md, '\u009b') {
		t.Error("a raw C1 control character reached the Markdown")
	}
}
