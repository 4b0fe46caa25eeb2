package journal

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// DropWritten forgets exactly the entries named and keeps the rest, in
// order, including one appended after the record was read.
func TestDropWrittenKeepsTheRest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "written.jsonl")
	var ids []string
	prev := ""
	for range 4 {
		e, stored, err := Entry{Event: ActionApplied, Actor: "alice", Kind: "retries", Target: "checkout"}.Seal(prev)
		if err != nil {
			t.Fatal(err)
		}
		if err := AppendWritten(path, stored); err != nil {
			t.Fatal(err)
		}
		ids, prev = append(ids, e.ID), e.Hash
	}
	if err := DropWritten(path, map[string]bool{ids[0]: true, ids[2]: true}); err != nil {
		t.Fatal(err)
	}
	_, stored, _ := Entry{Event: Note, Actor: "bob"}.Seal(prev)
	if err := AppendWritten(path, stored); err != nil {
		t.Fatal(err)
	}
	got, err := ReadWritten(path)
	if err != nil || len(got) != 3 || got[0].ID != ids[1] || got[1].ID != ids[3] || got[2].Actor != "bob" {
		t.Fatalf("%v %+v", err, got)
	}
	for _, e := range got[:2] {
		if _, err := Parse(mustStored(t, e)); err != nil {
			t.Fatalf("kept entry no longer parses: %v", err)
		}
	}
	if err := DropWritten(filepath.Join(t.TempDir(), "none"), map[string]bool{"x": true}); err != nil {
		t.Fatalf("no record: %v", err)
	}
}

func mustStored(t *testing.T, e Entry) []byte {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
