package alerts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
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

// TemplateFuncs are the functions a notification template may call: json
// writes a value (a string, the whole notice) as JSON.
var TemplateFuncs = template.FuncMap{"json": jsonText}

func jsonText(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
