package journal

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/internal/testenv"
)

func TestStreamRangeTailFollow(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t, testenv.RedisOptions{})
	c := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer c.Close()
	entries := make([]Entry, 2*pageSize+500)
	for i := range entries {
		entries[i] = Entry{ID: strconv.Itoa(i), Time: t0, Event: Note, Actor: "a"}
	}
	pipe := c.Pipeline()
	for _, l := range chain(t, entries) {
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: "j", Values: []string{"entry", string(l)}})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	s := NewStream(c, "j")
	if n, err := Verify(s.Range(ctx, "-", "+"), ""); err != nil || n != len(entries) {
		t.Fatalf("range over pages: %d %v", n, err)
	}
	tail, err := s.Tail(ctx, 2)
	if err != nil || len(tail) != 2 || mustParse(t, tail[1].Data).ID != strconv.Itoa(len(entries)-1) {
		t.Fatalf("tail: %v", err)
	}

	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	got := make(chan string)
	go func() {
		for rec, err := range s.Follow(ctx, "$") {
			if err != nil {
				t.Error(err)
				return
			}
			e, _ := Parse(rec.Data)
			got <- e.ID
		}
		close(got)
	}()
	time.Sleep(100 * time.Millisecond) // let Follow find the end before appending
	for _, l := range chain(t, []Entry{{ID: "new-1", Time: t0, Event: Note}, {ID: "new-2", Time: t0, Event: Note}}) {
		c.XAdd(ctx, &redis.XAddArgs{Stream: "j", Values: []string{"entry", string(l)}})
	}
	if a, b := <-got, <-got; a != "new-1" || b != "new-2" {
		t.Fatalf("follow saw %q %q", a, b)
	}
	cancel()
	for range got {
	}
}
