package alerts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/resilience"
)

// Outbox is where notices wait until a sender has posted them;
// *controlplane.Outbox keeps them in Redis, so a notice queued by a
// replica that then dies is sent by another.
type Outbox interface {
	Add(ctx context.Context, key string, payload []byte) error
	Next(ctx context.Context, count int, block time.Duration) (entries []controlplane.OutboxEntry, lost int, err error)
	Renew(ctx context.Context, id string) (bool, error)
	Done(ctx context.Context, id string) error
	Leave(ctx context.Context) error
	Len(ctx context.Context) (int64, error)
	// Lease is how long a sender may go silent on a notice before
	// another takes it over.
	Lease() time.Duration
}

// Notifier queues notices in the outbox and, in the background, posts each
// to every webhook, retrying with capped, fully jittered exponential
// backoff and waiting as long as a webhook's Retry-After asks (up to
// maxRetryAfter). Queueing is one Redis write: it never waits on a
// webhook. Delivery is at least once: a sender that dies mid-notice leaves
// it to another after the lease, which may post it again, so every post
// carries the notice's Idempotency-Key.
type Notifier struct {
	hooks   []Webhook
	outbox  Outbox
	lease   time.Duration
	client  *http.Client
	metrics *Metrics
	log     *slog.Logger
	// Tries and backoff bound each delivery.
	tries      int
	base, ceil time.Duration
	block      time.Duration // one read of the outbox waits this long for new notices
	wg         sync.WaitGroup
	stop       chan struct{}
	once       sync.Once
}

// maxRetryAfter is the longest a webhook's Retry-After is waited for; one
// asking for longer is given up on, so that one webhook cannot hold the
// notices behind it for longer.
const maxRetryAfter = time.Minute

// noticeTimeout bounds one post to a webhook.
const noticeTimeout = 5 * time.Second

// noticeBatch is how many notices one sender takes at a time.
const noticeBatch = 16

// NewNotifier starts a sender on outbox. It renews its lease on a notice
// every third of the outbox's lease while it waits to post again, and a
// post times out after noticeTimeout, which the lease must exceed.
func NewNotifier(hooks []Webhook, outbox Outbox, m *Metrics, log *slog.Logger) *Notifier {
	n := &Notifier{hooks: hooks, outbox: outbox, lease: outbox.Lease(), metrics: m, log: log, tries: 5,
		base: 200 * time.Millisecond, ceil: 10 * time.Second, block: 2 * time.Second, stop: make(chan struct{}),
		client: &http.Client{Timeout: noticeTimeout}}
	if len(hooks) > 0 {
		n.wg.Add(1)
		go n.run()
	}
	return n
}

// Enqueue queues x under key, the same for every delivery of the event it
// tells about. nil, or no webhooks, does nothing. An error means x is not
// queued; a full outbox drops x, counted, and is not an error.
func (n *Notifier) Enqueue(ctx context.Context, key string, x Notice) error {
	if n == nil || len(n.hooks) == 0 {
		return nil
	}
	b, err := json.Marshal(x.clipped())
	if err == nil {
		err = n.outbox.Add(ctx, key, b)
	}
	switch {
	case errors.Is(err, controlplane.ErrOutboxFull):
		n.metrics.notification("dropped")
		n.log.Warn("notification outbox full: notice dropped", "event", x.Event, "target", x.Target)
		return nil
	case err != nil:
		n.metrics.notification("failed")
		n.log.Error("notification not queued", "event", x.Event, "target", x.Target, "err", err)
		return fmt.Errorf("queue the notification: %w", err)
	}
	return nil
}

// noticeFieldRunes bounds each text field of a queued notice: alert
// labels and annotations come from outside, and the outbox holds up to
// controlplane.OutboxMaxLen notices.
const noticeFieldRunes = 500

// clipped is x with every text field at most noticeFieldRunes long, but
// Undo, which stormctl wrote and which must stay runnable.
func (x Notice) clipped() Notice {
	for _, f := range []*string{&x.Event, &x.Alert, &x.Target, &x.Summary, &x.Incident, &x.Playbook, &x.Actor, &x.Dashboard} {
		*f = sanitize.Clip(*f, noticeFieldRunes)
	}
	done := make([]string, len(x.Done))
	for i, d := range x.Done {
		done[i] = sanitize.Clip(d, noticeFieldRunes)
	}
	x.Done = done
	return x
}

// Close stops the sender and waits up to ctx for the notice it is posting.
// Notices still queued stay in the outbox for the next sender.
func (n *Notifier) Close(ctx context.Context) {
	if n == nil || len(n.hooks) == 0 {
		return
	}
	n.once.Do(func() { close(n.stop) })
	done := make(chan struct{})
	go func() { n.wg.Wait(); close(done) }()
	select {
	case <-done:
		_ = n.outbox.Leave(ctx)
	case <-ctx.Done():
	}
}

func (n *Notifier) stopping() bool {
	select {
	case <-n.stop:
		return true
	default:
		return false
	}
}

func (n *Notifier) run() {
	defer n.wg.Done()
	ctx := context.Background()
	for fails := 0; !n.stopping(); {
		entries, lost, err := n.outbox.Next(ctx, noticeBatch, n.block)
		for range lost {
			n.metrics.notification("lost")
		}
		if err != nil {
			fails++
			n.log.Warn("notification outbox unreachable; notices wait there", "err", err)
			if !n.sleep(n.backoff(min(fails, 6))) {
				return
			}
			continue
		}
		fails = 0
		if l, err := n.outbox.Len(ctx); err == nil {
			n.metrics.outboxLen(l)
		}
		for _, e := range entries {
			if !n.send(ctx, e) {
				return
			}
		}
	}
}

// send posts one notice to every webhook and removes it from the outbox.
// false: the sender is stopping, and the notice stays for the next one.
func (n *Notifier) send(ctx context.Context, e controlplane.OutboxEntry) bool {
	var x Notice
	if err := json.Unmarshal(e.Payload, &x); err != nil {
		n.metrics.notification("failed")
		n.log.Error("notification unreadable; removed", "id", e.ID, "err", err)
	} else {
		for _, h := range n.hooks {
			switch n.deliver(ctx, h, e, x) {
			case stopped:
				return false
			case takenOver:
				return true
			}
		}
	}
	if err := n.outbox.Done(ctx, e.ID); err != nil {
		n.log.Warn("notification sent but still queued; it may be sent again", "id", e.ID, "err", err)
	}
	return true
}

type delivery int

const (
	finished  delivery = iota // sent, or failed for good
	stopped                   // the sender is stopping
	takenOver                 // another sender has the notice now
)

func (n *Notifier) deliver(ctx context.Context, h Webhook, e controlplane.OutboxEntry, x Notice) delivery {
	body, err := h.Body(x)
	if err != nil {
		n.metrics.notification("failed")
		n.log.Error("notification template", "url", h.URL, "err", err)
		return finished
	}
	for try := 0; try < n.tries; try++ {
		wait, err := n.post(h, e.Key, body)
		if err == nil {
			n.metrics.notification("sent")
			return finished
		}
		if wait < 0 || try == n.tries-1 {
			n.metrics.notification("failed")
			n.log.Warn("notification not delivered", "url", h.URL, "tries", try+1, "err", err)
			return finished
		}
		if r := n.pause(ctx, e.ID, max(wait, n.backoff(try))); r != finished {
			return r
		}
	}
	return finished
}

// backoff is full jitter: random(0, min(ceil, base·2^try)).
func (n *Notifier) backoff(try int) time.Duration {
	return time.Duration(rand.Int64N(int64(min(n.ceil, n.base<<try)) + 1))
}

// pause waits d before the next post, renewing the lease on notice id
// every third of the lease and once more at the end.
func (n *Notifier) pause(ctx context.Context, id string, d time.Duration) delivery {
	for end := time.Now().Add(d); ; {
		if !n.sleep(min(time.Until(end), n.lease/3)) {
			return stopped
		}
		if ok, err := n.outbox.Renew(ctx, id); err == nil && !ok {
			return takenOver
		}
		if !time.Now().Before(end) {
			return finished
		}
	}
}

// sleep waits d; false when the sender is stopping.
func (n *Notifier) sleep(d time.Duration) bool {
	t := time.NewTimer(max(d, 0))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-n.stop:
		return false
	}
}

// post sends one body. wait is negative when a retry cannot pass (a 4xx
// other than 429, or a Retry-After over maxRetryAfter), else the least
// time the webhook asked to be left alone (its Retry-After).
func (n *Notifier) post(h Webhook, key string, body []byte) (wait time.Duration, err error) {
	req, err := http.NewRequest(http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return -1, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	if h.Key != nil {
		SetSignature(req.Header, h.Key, body, time.Now())
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	switch {
	case resp.StatusCode/100 == 2:
		return 0, nil
	case resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < 500:
		return -1, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	d, _ := resilience.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	if d > maxRetryAfter {
		return -1, fmt.Errorf("HTTP %d, Retry-After %s (longer than %s)", resp.StatusCode, d, maxRetryAfter)
	}
	return d, fmt.Errorf("HTTP %d", resp.StatusCode)
}
