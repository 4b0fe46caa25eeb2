package controlplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/journal"
)

// The outbox holds the notifications a process has promised to send, in a
// Redis stream read through one consumer group: a notice is handed over
// before the webhook that caused it is answered, so it outlives the process
// that queued it. Any replica sends each notice once; a notice whose sender
// died stays pending under its name and is taken over once that sender's
// lease on it has run out.

// Notices is the key of the outbox stream.
func (k Keys) Notices() string { return k.Prefix() + "notices" }

// outboxGroup is the consumer group every sender reads the outbox through.
const outboxGroup = "senders"

// OutboxMaxLen bounds the outbox: a notice added to a full outbox is
// refused, never one already queued trimmed. Senders empty it in seconds;
// only an outage of every webhook through hours of alerts fills it.
const OutboxMaxLen = 10000

// sweepEvery is how often a sender forgets the names of senders that left
// nothing pending and were last seen over an hour ago (killed processes).
const sweepEvery = time.Hour

// OutboxEntry is one notice taken from the outbox.
type OutboxEntry struct {
	ID      string // the stream id; the lease is held on it
	Key     string // the notice's idempotency key, the same for every copy of it
	Payload []byte
}

// Outbox is one sender's handle on the outbox.
type Outbox struct {
	s        *Store
	consumer string
	lease    time.Duration

	mu        sync.Mutex
	grouped   bool
	cursor    string // where the next scan for expired leases starts
	lastSweep time.Time
}

// Outbox returns a sender's handle. lease is how long the sender may hold a
// notice without renewing it before another sender may take it over.
func (s *Store) Outbox(lease time.Duration) *Outbox {
	host, _ := os.Hostname()
	return &Outbox{s: s, lease: lease, cursor: "0-0",
		consumer: fmt.Sprintf("%s-%d-%s", cmp.Or(host, "host"), os.Getpid(), journal.NewID())}
}

// Lease is how long this sender may hold a notice without renewing it.
func (o *Outbox) Lease() time.Duration { return o.lease }

// Consumer is the sender's name in the consumer group.
func (o *Outbox) Consumer() string { return o.consumer }

// addScript appends a notice unless the outbox is full.
//
//	KEYS: 1 outbox
//	ARGV: 1 max length · 2 key · 3 payload
//
// Replies: 1 added · 0 full.
var addScript = redis.NewScript(`
if redis.call('XLEN', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('XADD', KEYS[1], '*', 'key', ARGV[2], 'payload', ARGV[3])
return 1
`)

// ErrOutboxFull is Add's answer when OutboxMaxLen notices wait already.
var ErrOutboxFull = errors.New("the notification outbox is full")

// Add appends a notice with its idempotency key. Once Add returns nil the
// notice is Redis's to keep until a sender marks it done.
func (o *Outbox) Add(ctx context.Context, key string, payload []byte) error {
	n, err := addScript.Run(ctx, o.s.client, []string{o.s.keys.Notices()}, OutboxMaxLen, key, payload).Int()
	if err != nil {
		return o.s.classify("queue notification "+key, err, true)
	}
	if n == 0 {
		return ErrOutboxFull
	}
	return nil
}

// Next takes up to count notices for this sender: first those whose
// sender's lease ran out, then new ones, waiting up to block for them.
// lost counts pending notices deleted from the stream before anyone sent
// them (by hand: stormctl never trims the outbox).
func (o *Outbox) Next(ctx context.Context, count int, block time.Duration) (entries []OutboxEntry, lost int, err error) {
	if err := o.ensureGroup(ctx); err != nil {
		return nil, 0, err
	}
	o.sweep(ctx)
	o.mu.Lock()
	cursor := o.cursor
	o.mu.Unlock()
	msgs, next, deleted, err := o.s.client.XAutoClaimWithDeleted(ctx, &redis.XAutoClaimArgs{Stream: o.s.keys.Notices(),
		Group: outboxGroup, Consumer: o.consumer, MinIdle: o.lease, Start: cursor, Count: int64(count)}).Result()
	if err != nil {
		return nil, 0, o.readErr(err)
	}
	o.mu.Lock()
	o.cursor = next
	o.mu.Unlock()
	if len(msgs) == 0 {
		streams, rerr := o.s.client.XReadGroup(ctx, &redis.XReadGroupArgs{Group: outboxGroup, Consumer: o.consumer,
			Streams: []string{o.s.keys.Notices(), ">"}, Count: int64(count), Block: block}).Result()
		switch {
		case errors.Is(rerr, redis.Nil):
		case rerr != nil:
			return nil, len(deleted), o.readErr(rerr)
		default:
			for _, st := range streams {
				msgs = append(msgs, st.Messages...)
			}
		}
	}
	for _, m := range msgs {
		key, _ := m.Values["key"].(string)
		payload, _ := m.Values["payload"].(string)
		entries = append(entries, OutboxEntry{ID: m.ID, Key: key, Payload: []byte(payload)})
	}
	return entries, len(deleted), nil
}

// readErr classifies a read of the group; a group that vanished (Redis
// restarted without persistence) is created again on the next call. A
// read whose reply was lost is not an uncertain change for a person to
// check: the notices it took wait under this sender until the lease ends.
func (o *Outbox) readErr(err error) error {
	if redis.HasErrorPrefix(err, "NOGROUP") {
		o.mu.Lock()
		o.grouped = false
		o.mu.Unlock()
	}
	return o.s.classify("read notifications", err, false)
}

func (o *Outbox) ensureGroup(ctx context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.grouped {
		return nil
	}
	// From the stream's start: notices added before any sender existed are sent too.
	err := o.s.client.XGroupCreateMkStream(ctx, o.s.keys.Notices(), outboxGroup, "0").Err()
	if err != nil && !redis.HasErrorPrefix(err, "BUSYGROUP") {
		return o.s.classify("create the notification group", err, true)
	}
	o.grouped = true
	return nil
}

// renewScript resets the idle time of a pending notice only while the
// caller still holds it, so a sender that was too slow learns that another
// took the notice over instead of taking it back.
//
//	KEYS: 1 outbox
//	ARGV: 1 group · 2 consumer · 3 id
//
// Replies: 1 renewed · 0 not held by the consumer.
var renewScript = redis.NewScript(`
local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)
if #p == 0 or p[1][2] ~= ARGV[2] then return 0 end
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[3], 'JUSTID')
return 1
`)

// Renew extends this sender's lease on notice id; false means another
// sender has taken it over (this one was slower than the lease).
func (o *Outbox) Renew(ctx context.Context, id string) (bool, error) {
	n, err := renewScript.Run(ctx, o.s.client, []string{o.s.keys.Notices()}, outboxGroup, o.consumer, id).Int()
	if err != nil {
		return false, o.s.classify("renew notification "+id, err, true)
	}
	return n == 1, nil
}

// doneScript acknowledges a notice and deletes it, in one step.
//
//	KEYS: 1 outbox
//	ARGV: 1 group · 2 id
var doneScript = redis.NewScript(`
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
return redis.call('XDEL', KEYS[1], ARGV[2])
`)

// Done removes a notice that was sent, or will never be.
func (o *Outbox) Done(ctx context.Context, id string) error {
	err := doneScript.Run(ctx, o.s.client, []string{o.s.keys.Notices()}, outboxGroup, id).Err()
	return o.s.classify("mark notification "+id+" sent", err, true)
}

// Len is the number of notices in the outbox: waiting, or being posted.
func (o *Outbox) Len(ctx context.Context) (int64, error) {
	n, err := o.s.client.XLen(ctx, o.s.keys.Notices()).Result()
	return n, o.s.classify("count notifications", err, false)
}

// Leave removes this sender's name from the group when it holds nothing:
// a sender stopping cleanly leaves no trace.
func (o *Outbox) Leave(ctx context.Context) error {
	pend, err := o.s.client.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: o.s.keys.Notices(), Group: outboxGroup,
		Start: "-", End: "+", Count: 1, Consumer: o.consumer}).Result()
	if err != nil || len(pend) > 0 {
		return o.s.classify("leave the notification group", err, false)
	}
	return o.s.classify("leave the notification group",
		o.s.client.XGroupDelConsumer(ctx, o.s.keys.Notices(), outboxGroup, o.consumer).Err(), true)
}

// sweep forgets, once per sweepEvery, the senders that hold nothing and
// have not read for an hour: processes killed without leaving. A sender
// that holds notices stays until another has taken them over.
func (o *Outbox) sweep(ctx context.Context) {
	o.mu.Lock()
	due := time.Since(o.lastSweep) >= sweepEvery
	if due {
		o.lastSweep = time.Now()
	}
	o.mu.Unlock()
	if !due {
		return
	}
	cs, err := o.s.client.XInfoConsumers(ctx, o.s.keys.Notices(), outboxGroup).Result()
	if err != nil {
		return
	}
	for _, c := range cs {
		if c.Pending == 0 && c.Idle >= time.Hour && c.Name != o.consumer {
			_ = o.s.client.XGroupDelConsumer(ctx, o.s.keys.Notices(), outboxGroup, c.Name).Err()
		}
	}
}
