package kubernetes

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// A pass stopped after it wrote an object still journals the write (on a
// real redis-server): the next pass would find the object as wanted and
// journal nothing.
func TestRecordJournalsAfterStop(t *testing.T) {
	r := testenv.StartRedis(t, testenv.RedisOptions{})
	store, err := controlplane.NewStore(context.Background(), redis.NewClient(&redis.Options{Addr: r.Addr}), "shop")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	a := New(Options{Store: store, Mapping: Mapping{Namespace: "shop"}})
	l := &lever.Lever{Kind: lever.Autoscaling, Target: "checkout", Value: lever.ValueFrozen, ActionID: "A1"}
	rep := &PassReport{}
	rep.add(objectOutcome{object: "hpa/checkout in shop", wrote: true, applied: []actuation{{lever: l, member: "autoscaling:checkout", action: "A1",
		changes: []FieldChange{{Path: "/spec/behavior", Before: json.RawMessage("null"), After: json.RawMessage(`{"scaleUp":{"selectPolicy":"Disabled"}}`)}}}}})
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	a.record(stopped, []lever.Lever{*l}, map[string]bool{"autoscaling:checkout": true}, rep)
	var got []journal.Entry
	for rec, err := range store.Journal().Range(context.Background(), "-", "+") {
		if err != nil {
			t.Fatal(err)
		}
		var e journal.Entry
		if err := json.Unmarshal(rec.Data, &e); err != nil {
			t.Fatal(err)
		}
		got = append(got, e)
	}
	if len(got) != 1 || got[0].Event != journal.ActuationApplied || got[0].Object != "hpa/checkout in shop" || got[0].ActionID != "A1" {
		t.Errorf("journal after a stopped pass: %+v", got)
	}
}
