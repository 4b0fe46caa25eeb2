package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/testenv"
)

func TestSealParseRoundTrip(t *testing.T) {
	for i, data := range chain(t, scriptedIncident()) {
		e, err := Parse(data)
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		again, stored, _ := e.Seal(e.PrevHash)
		if again.Hash != e.Hash || !bytes.Equal(stored, data) {
			t.Fatalf("entry %d does not reseal to itself", i)
		}
	}
}

// tampered copies of the scripted journal, each with the index (1-based)
// of the first entry verify must name.
func tamperings(t *testing.T, lines [][]byte) map[string]struct {
	lines [][]byte
	at    int
} {
	edited := slices.Clone(lines)
	edited[4] = bytes.Replace(edited[4], []byte(`"bob"`), []byte(`"eve"`), 1)
	reformatted := slices.Clone(lines)
	reformatted[2] = bytes.Replace(reformatted[2], []byte(`,"event"`), []byte(`, "event"`), 1)
	extra := slices.Clone(lines)
	extra[6] = bytes.Replace(extra[6], []byte(`{"id"`), []byte(`{"note":"x","id"`), 1)
	// An inserted entry correctly linked to its predecessor still breaks
	// the link of the entry after it.
	_, forgedLine, _ := Entry{ID: "X", Event: Note, Actor: "eve", Reason: "all fine"}.Seal(mustParse(t, lines[3]).Hash)
	return map[string]struct {
		lines [][]byte
		at    int
	}{
		"edit":          {edited, 5},
		"reformat":      {reformatted, 3},
		"unknown field": {extra, 7},
		"delete":        {slices.Delete(slices.Clone(lines), 5, 6), 6},
		"delete first":  {slices.Clone(lines)[1:], 1},
		"reorder":       {swap(lines, 7, 8), 8},
		"insert":        {slices.Insert(slices.Clone(lines), 4, forgedLine), 6},
		"garbage":       {slices.Insert(slices.Clone(lines), 2, []byte("{not json")), 3},
	}
}

func swap(lines [][]byte, i, j int) [][]byte {
	c := slices.Clone(lines)
	c[i], c[j] = c[j], c[i]
	return c
}

func mustParse(t *testing.T, data []byte) Entry {
	e, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestVerifyDetectsTampering(t *testing.T) {
	lines := chain(t, scriptedIncident())
	head := mustParse(t, lines[len(lines)-1]).Hash
	if n, err := Verify(records(lines), head); err != nil || n != len(lines) {
		t.Fatalf("intact journal: %d, %v", n, err)
	}
	for name, tc := range tamperings(t, lines) {
		t.Run(name, func(t *testing.T) {
			_, err := Verify(records(tc.lines), head)
			var ve *VerifyError
			if !errors.As(err, &ve) || exit.Code(err) != exit.CheckFailed {
				t.Fatalf("want *VerifyError exiting 4, got %v", err)
			}
			if ve.Index != tc.at {
				t.Fatalf("named entry %d, want %d: %v", ve.Index, tc.at, err)
			}
		})
	}
	t.Run("appended after the head was read", func(t *testing.T) {
		if _, err := Verify(records(lines), mustParse(t, lines[5]).Hash); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete last", func(t *testing.T) {
		_, err := Verify(records(lines[:len(lines)-1]), head)
		if err == nil || !strings.Contains(err.Error(), "removed") {
			t.Fatalf("truncated journal: %v", err)
		}
	})
}

// TestVerifyStreamCopies tampers with copies of a real Redis stream.
func TestVerifyStreamCopies(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t, testenv.RedisOptions{})
	c := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer c.Close()
	lines := chain(t, scriptedIncident())
	head := mustParse(t, lines[len(lines)-1]).Hash
	write := func(key string, ls [][]byte) *Stream {
		for _, l := range ls {
			if err := c.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []string{"entry", string(l)}}).Err(); err != nil {
				t.Fatal(err)
			}
		}
		return NewStream(c, key)
	}
	if _, err := Verify(write("original", lines).Range(ctx, "-", "+"), head); err != nil {
		t.Fatal(err)
	}
	for name, tc := range tamperings(t, lines) {
		_, err := Verify(write("copy:"+name, tc.lines).Range(ctx, "-", "+"), head)
		var ve *VerifyError
		if !errors.As(err, &ve) || ve.Index != tc.at || !strings.Contains(ve.Pos, "-") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, l := range chain(f, scriptedIncident()) {
		f.Add(l)
	}
	f.Add([]byte(`{"id":"x","time":"2024-01-01T00:00:00Z","event":"note","actor":"a","prev_hash":""}`))
	f.Add([]byte(`{"evidence":[{"value":1e400}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := Parse(data)
		if err != nil {
			return
		}
		// Whatever parses is canonical: its own marshalling parses again.
		again, err := json.Marshal(e)
		if err != nil || !bytes.Equal(again, bytes.TrimSpace(data)) {
			t.Fatalf("accepted %q but it marshals to %q (%v)", data, again, err)
		}
	})
}
