package journal

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// pageSize is how many entries one XRANGE reads; reading page by page keeps
// memory flat however long the journal is.
const pageSize = 1000

// Stream reads the journal stream of a control plane (Keys.Journal()).
type Stream struct {
	client redis.Cmdable
	key    string
}

// NewStream reads the stream key through client.
func NewStream(client redis.Cmdable, key string) *Stream { return &Stream{client: client, key: key} }

// StreamID is the smallest stream id at or after t, for Range bounds.
func StreamID(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

// Range streams the records with stream ids from..to inclusive ("-" and
// "+" for the ends), in order, a page at a time.
func (s *Stream) Range(ctx context.Context, from, to string) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		for {
			msgs, err := s.client.XRangeN(ctx, s.key, from, to, pageSize).Result()
			if err != nil {
				yield(Record{}, err)
				return
			}
			for _, m := range msgs {
				if !yield(record(m), nil) {
					return
				}
			}
			if len(msgs) < pageSize {
				return
			}
			from = "(" + msgs[len(msgs)-1].ID
		}
	}
}

// Tail returns the last n records, oldest first.
func (s *Stream) Tail(ctx context.Context, n int64) ([]Record, error) {
	msgs, err := s.client.XRevRangeN(ctx, s.key, "+", "-", n).Result()
	if err != nil {
		return nil, err
	}
	slices.Reverse(msgs)
	out := make([]Record, len(msgs))
	for i, m := range msgs {
		out[i] = record(m)
	}
	return out, nil
}

// Follow streams records appended after stream id after ("$" for new ones
// only) until ctx ends, blocking on the server between them.
func (s *Stream) Follow(ctx context.Context, after string) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		if after == "$" {
			last, err := s.client.XRevRangeN(ctx, s.key, "+", "-", 1).Result()
			if err != nil {
				yield(Record{}, err)
				return
			}
			after = "0"
			if len(last) > 0 {
				after = last[0].ID
			}
		}
		for ctx.Err() == nil {
			res, err := s.client.XRead(ctx, &redis.XReadArgs{Streams: []string{s.key, after}, Block: 2 * time.Second, Count: 100}).Result()
			if errors.Is(err, redis.Nil) {
				continue
			}
			if err != nil {
				if ctx.Err() == nil {
					yield(Record{}, err)
				}
				return
			}
			for _, st := range res {
				for _, m := range st.Messages {
					after = m.ID
					if !yield(record(m), nil) {
						return
					}
				}
			}
		}
	}
}

func record(m redis.XMessage) Record {
	data, _ := m.Values["entry"].(string)
	return Record{Pos: m.ID, Data: []byte(data)}
}
