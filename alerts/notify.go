package alerts

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/stormctl/stormctl/internal/sanitize"
)

// Notice is what a notification says: what fired, what was done, by whom,
// until when, and the command that undoes it. A Go template for a webhook
// sees these fields.
type Notice struct {
	Event     string    `json:"event"` // alert.fired, alert.resolved, action.applied, action.released, ...
	Alert     string    `json:"alert,omitempty"`
	Target    string    `json:"target,omitempty"`
	Summary   string    `json:"summary,omitempty"`
	Incident  string    `json:"incident,omitempty"`
	Playbook  string    `json:"playbook,omitempty"`
	Done      []string  `json:"done,omitempty"` // what stormctl did about it
	Actor     string    `json:"actor"`
	Until     time.Time `json:"until,omitzero"` // when the lever expires
	Undo      string    `json:"undo,omitempty"` // the exact command that undoes it
	Dashboard string    `json:"dashboard,omitempty"`
	Time      time.Time `json:"time"`
}

// Text is the notice as one message. Alert labels and annotations are
// outside text: control characters are escaped.
func (n Notice) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "[stormctl] %s", n.Event)
	if n.Alert != "" {
		fmt.Fprintf(&b, " %s", n.Alert)
	}
	if n.Target != "" {
		fmt.Fprintf(&b, " on %s", n.Target)
	}
	if n.Summary != "" {
		fmt.Fprintf(&b, ": %s", n.Summary)
	}
	if n.Incident != "" {
		fmt.Fprintf(&b, "\nincident %s", n.Incident)
	}
	if n.Playbook != "" {
		fmt.Fprintf(&b, "; playbook %s", n.Playbook)
	}
	for _, d := range n.Done {
		fmt.Fprintf(&b, "\ndone by %s: %s", n.Actor, d)
	}
	if !n.Until.IsZero() {
		fmt.Fprintf(&b, "\nuntil %s", n.Until.UTC().Format(time.RFC3339))
	}
	if n.Undo != "" {
		fmt.Fprintf(&b, "\nundo: %s", n.Undo)
	}
	if n.Dashboard != "" {
		fmt.Fprintf(&b, "\nopen: %s", n.Dashboard)
	}
	return sanitize.Block(b.String())
}

func alertNotice(ev *Event, done []string) Notice {
	n := Notice{Event: string(AlertFired), Alert: ev.Name, Target: ev.Target(), Summary: ev.Annotations["summary"],
		Incident: ev.Incident, Playbook: ev.Playbook, Actor: Actor, Dashboard: ev.Dashboard, Time: time.Now().UTC()}
	if ev.Status == Resolved {
		n.Event = string(AlertResolved)
	}
	if ev.Opened {
		done = append([]string{"opened incident " + ev.Incident}, done...)
	}
	for _, d := range done {
		if d != "" {
			n.Done = append(n.Done, d)
		}
	}
	return n
}

// Webhook is one notification destination.
type Webhook struct {
	URL  string
	Key  []byte             // HMAC key signing each body; nil: unsigned
	Tmpl *template.Template // renders the body from a Notice; nil: Slack's {"text": ...}
}

// Body renders n for w.
func (w Webhook) Body(n Notice) ([]byte, error) {
	if w.Tmpl == nil {
		return json.Marshal(map[string]string{"text": n.Text()})
	}
	var b bytes.Buffer
	if err := w.Tmpl.Execute(&b, n); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Notifier posts notices to webhooks from a bounded queue in the
// background, retrying with capped, fully jittered exponential backoff. It
// never blocks its caller: a full queue drops the notice and counts it.
type Notifier struct {
	hooks   []Webhook
	queue   chan Notice
	client  *http.Client
	metrics *Metrics
	log     *slog.Logger
	// Tries and backoff bound each delivery.
	tries      int
	base, ceil time.Duration
	wg         sync.WaitGroup
	stop       chan struct{}
	once       sync.Once
}

// NewNotifier starts a notifier with a queue of size notices (default 256).
func NewNotifier(hooks []Webhook, size int, m *Metrics, log *slog.Logger) *Notifier {
	if size <= 0 {
		size = 256
	}
	n := &Notifier{hooks: hooks, queue: make(chan Notice, size), metrics: m, log: log, tries: 5,
		base: 200 * time.Millisecond, ceil: 10 * time.Second, stop: make(chan struct{}),
		client: &http.Client{Timeout: 5 * time.Second}}
	n.wg.Add(1)
	go n.run()
	return n
}

// Enqueue queues n for every webhook; nil or no webhooks does nothing.
func (n *Notifier) Enqueue(x Notice) {
	if n == nil || len(n.hooks) == 0 {
		return
	}
	select {
	case n.queue <- x:
	default:
		n.metrics.notification("dropped")
		n.log.Warn("notification queue full: notice dropped", "event", x.Event, "target", x.Target)
	}
}

// Close stops taking notices and waits up to ctx for the queued ones.
func (n *Notifier) Close(ctx context.Context) {
	if n == nil {
		return
	}
	n.once.Do(func() { close(n.stop) })
	done := make(chan struct{})
	go func() { n.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

func (n *Notifier) run() {
	defer n.wg.Done()
	for {
		select {
		case x := <-n.queue:
			for _, h := range n.hooks {
				n.deliver(h, x)
			}
		case <-n.stop:
			for {
				select {
				case x := <-n.queue:
					for _, h := range n.hooks {
						n.deliver(h, x)
					}
				default:
					return
				}
			}
		}
	}
}

func (n *Notifier) deliver(h Webhook, x Notice) {
	body, err := h.Body(x)
	if err != nil {
		n.metrics.notification("failed")
		n.log.Error("notification template", "url", h.URL, "err", err)
		return
	}
	for try := 0; try < n.tries; try++ {
		retry, err := n.post(h, body)
		if err == nil {
			n.metrics.notification("sent")
			return
		}
		if !retry || try == n.tries-1 {
			n.metrics.notification("failed")
			n.log.Warn("notification not delivered", "url", h.URL, "tries", try+1, "err", err)
			return
		}
		// Full jitter: sleep = random(0, min(ceil, base·2^try)).
		d := time.Duration(rand.Int64N(int64(min(n.ceil, n.base<<try)) + 1))
		select {
		case <-time.After(d):
		case <-n.stop:
			// Shutting down: one last try, no more waiting.
			if _, err := n.post(h, body); err == nil {
				n.metrics.notification("sent")
			} else {
				n.metrics.notification("failed")
			}
			return
		}
	}
}

// post sends one body; retry says whether a failure may pass on a retry
// (a network error, 429 or 5xx).
func (n *Notifier) post(h Webhook, body []byte) (retry bool, err error) {
	req, err := http.NewRequest(http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	if h.Key != nil {
		SetSignature(req.Header, h.Key, body, time.Now())
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return true, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return false, nil
	}
	return resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500, fmt.Errorf("HTTP %d", resp.StatusCode)
}

// TemplateFuncs are the functions a notification template may call: json
// writes a value (a string, the whole notice) as JSON.
var TemplateFuncs = template.FuncMap{"json": jsonText}

func jsonText(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
