package alerts

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
)

// post is one request a scripted webhook received.
type post struct {
	at  time.Time
	key string // Idempotency-Key
}

// scriptedHook answers each post with the next status of its script (the
// last one repeating), with Retry-After when set.
type scriptedHook struct {
	srv        *httptest.Server
	mu         sync.Mutex
	script     []int
	retryAfter string
	posts      []post
}

func newScriptedHook(t *testing.T, retryAfter string, script ...int) *scriptedHook {
	h := &scriptedHook{script: script, retryAfter: retryAfter}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h.mu.Lock()
		defer h.mu.Unlock()
		code := h.script[min(len(h.posts), len(h.script)-1)]
		h.posts = append(h.posts, post{at: time.Now(), key: r.Header.Get("Idempotency-Key")})
		if code != http.StatusOK && h.retryAfter != "" {
			w.Header().Set("Retry-After", h.retryAfter)
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *scriptedHook) got() []post {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]post(nil), h.posts...)
}

func (h *scriptedHook) set(retryAfter string, script ...int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.retryAfter, h.script, h.posts = retryAfter, script, nil
}

func outboxStore(t *testing.T) *controlplane.Store {
	t.Helper()
	r := testenv.StartRedis(t, testenv.RedisOptions{})
	s, err := controlplane.Open(context.Background(), config.Redis{URL: r.URL("", ""), Namespace: "notify"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func queued(t *testing.T, s *controlplane.Store) int64 {
	t.Helper()
	n, err := s.Client().XLen(context.Background(), s.Keys().Notices()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The sender waits as long as a 429's Retry-After asks, keeps the notice's
// Idempotency-Key across tries, gives up at once on a 4xx or on a
// Retry-After past maxRetryAfter, and removes each notice it is done with.
func TestNotifierRetries(t *testing.T) {
	ctx := context.Background()
	store := outboxStore(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name       string
		retryAfter string
		script     []int
		posts      int
		outcome    string
	}{
		{"RetryAfterHonoured", "1", []int{429, 200}, 2, "sent"},
		{"ClientErrorFinal", "", []int{400}, 1, "failed"},
		{"RetryAfterTooLong", "3600", []int{503}, 1, "failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newScriptedHook(t, tc.retryAfter, tc.script...)
			m := NewMetrics()
			n := NewNotifier([]Webhook{{URL: h.srv.URL}}, store.Outbox(20*time.Second), m, log)
			defer n.Close(ctx)
			if err := n.Enqueue(ctx, "event-"+tc.name, Notice{Event: "alert.fired", Alert: "retry_ratio"}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the notice to leave the outbox", func() bool { return queued(t, store) == 0 })
			got := h.got()
			if len(got) != tc.posts {
				t.Fatalf("%d posts, want %d", len(got), tc.posts)
			}
			for _, p := range got {
				if p.key != "event-"+tc.name {
					t.Errorf("Idempotency-Key %q", p.key)
				}
			}
			if tc.retryAfter == "1" && got[1].at.Sub(got[0].at) < time.Second {
				t.Errorf("posted again %s after a 429 with Retry-After: 1", got[1].at.Sub(got[0].at))
			}
			if v := testutil.ToFloat64(m.notifications.WithLabelValues(tc.outcome)); v != 1 {
				t.Errorf("notifications{outcome=%q} = %v, want 1", tc.outcome, v)
			}
		})
	}
}

// A sender that stops (or dies) while a webhook keeps failing leaves the
// notice in the outbox; the next sender takes it over once the lease ran
// out and delivers it with the same Idempotency-Key. With the notices in
// the process's memory, it was lost.
func TestNotifierHandsOver(t *testing.T) {
	ctx := context.Background()
	store := outboxStore(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := newScriptedHook(t, "30", 503)
	const lease = time.Second
	firstM := NewMetrics()
	first := NewNotifier([]Webhook{{URL: h.srv.URL}}, store.Outbox(lease), firstM, log)
	if err := first.Enqueue(ctx, "event-1", Notice{Event: "alert.fired", Alert: "retry_ratio"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first sender's post", func() bool { return len(h.got()) > 0 })
	first.Close(ctx)
	if n := queued(t, store); n != 1 {
		t.Fatalf("%d notices queued after the first sender stopped, want 1", n)
	}
	h.set("", 200)
	if q := testutil.ToFloat64(firstM.queued); q != 1 {
		t.Errorf("the first sender's queued gauge %v, want 1", q)
	}
	second := NewNotifier([]Webhook{{URL: h.srv.URL}}, store.Outbox(lease), NewMetrics(), log)
	defer second.Close(ctx)
	waitFor(t, "the second sender's post", func() bool { return len(h.got()) > 0 })
	waitFor(t, "the notice to leave the outbox", func() bool { return queued(t, store) == 0 })
	time.Sleep(lease + 500*time.Millisecond) // a second copy would have been taken over by now
	got := h.got()
	if len(got) != 1 || got[0].key != "event-1" {
		t.Fatalf("posts after the hand-over: %+v, want one with key event-1", got)
	}
	cs, err := store.Client().XInfoConsumers(ctx, store.Keys().Notices(), "senders").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Pending != 0 || strings.TrimSpace(c.Name) == "" {
			t.Errorf("sender %q still holds %d notices", c.Name, c.Pending)
		}
	}
}

// A notice built from hostile labels and annotations is clipped before it
// is queued: what one notice costs Redis is bounded, whatever the alert.
func TestNoticeBounded(t *testing.T) {
	ctx := context.Background()
	store := outboxStore(t)
	h := newScriptedHook(t, "30", 503) // nothing is sent: the notice stays queued
	n := NewNotifier([]Webhook{{URL: h.srv.URL}}, store.Outbox(time.Minute), NewMetrics(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer n.Close(ctx)
	huge := strings.Repeat("é", 1<<19) // 1 MiB, the webhook's body limit
	x := Notice{Event: "alert.fired", Alert: huge, Target: huge, Summary: huge, Done: []string{huge, huge}, Actor: Actor, Undo: "stormctl release A1"}
	if err := n.Enqueue(ctx, "big", x); err != nil {
		t.Fatal(err)
	}
	msgs, err := store.Client().XRange(ctx, store.Keys().Notices(), "-", "+").Result()
	if err != nil || len(msgs) != 1 {
		t.Fatalf("queued %d notices, %v", len(msgs), err)
	}
	payload, _ := msgs[0].Values["payload"].(string)
	if len(payload) > 8<<10 {
		t.Fatalf("a notice of %d bytes queued, want at most 8 KiB", len(payload))
	}
	var got Notice
	if err := json.Unmarshal([]byte(payload), &got); err != nil || got.Undo != x.Undo || !strings.HasSuffix(got.Summary, "…") {
		t.Fatalf("queued notice %.200s: %v", payload, err)
	}
}
