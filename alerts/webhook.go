package alerts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Message is Alertmanager's webhook body, payload version 4: the
// notify/webhook Message (version, groupKey, truncatedAlerts) around the
// template Data (receiver, status, alerts, groupLabels, commonLabels,
// commonAnnotations, externalURL). Source: github.com/prometheus/alertmanager
// notify/webhook/webhook.go @01b7141f and template/template.go @012dbc9d.
type Message struct {
	Version           string            `json:"version"`
	GroupKey          string            `json:"groupKey"`
	TruncatedAlerts   uint64            `json:"truncatedAlerts"`
	Receiver          string            `json:"receiver"`
	Status            string            `json:"status"`
	Alerts            []Alert           `json:"alerts"`
	GroupLabels       map[string]string `json:"groupLabels"`
	CommonLabels      map[string]string `json:"commonLabels"`
	CommonAnnotations map[string]string `json:"commonAnnotations"`
	ExternalURL       string            `json:"externalURL"`
}

// Alert is one alert of a Message.
type Alert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
}

// Alert statuses.
const (
	Firing   = "firing"
	Resolved = "resolved"
)

// Limits bound what one webhook may hold. The body limit is enforced while
// reading; the others after decoding, before anything is acted on.
type Limits struct {
	MaxBody     int64 // bytes; default 1 MiB
	MaxAlerts   int   // alerts in one group; default 1000
	MaxLabels   int   // labels or annotations on one alert; default 64
	MaxValueLen int   // bytes of one label, annotation or group key; default 4096
}

func (l Limits) withDefaults() Limits {
	if l.MaxBody <= 0 {
		l.MaxBody = 1 << 20
	}
	if l.MaxAlerts <= 0 {
		l.MaxAlerts = 1000
	}
	if l.MaxLabels <= 0 {
		l.MaxLabels = 64
	}
	if l.MaxValueLen <= 0 {
		l.MaxValueLen = 4096
	}
	return l
}

// RefusedError is a webhook refused before anything was acted on. Reason
// is the label it is counted under in /metrics.
type RefusedError struct {
	Reason string // unauthorized, bad_signature, replayed, too_large, too_many_alerts, malformed
	Status int    // the HTTP status answered
	Detail string
}

func (e *RefusedError) Error() string { return "webhook refused (" + e.Reason + "): " + e.Detail }

func refused(reason string, status int, format string, a ...any) *RefusedError {
	return &RefusedError{Reason: reason, Status: status, Detail: fmt.Sprintf(format, a...)}
}

// Decode parses a webhook body already read within Limits.MaxBody and
// checks it against the other limits. Errors name the byte offset of
// malformed JSON.
func Decode(body []byte, lim Limits) (*Message, error) {
	lim = lim.withDefaults()
	if int64(len(body)) > lim.MaxBody {
		return nil, refused("too_large", 413, "body over %d bytes", lim.MaxBody)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var m Message
	if err := dec.Decode(&m); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return nil, refused("malformed", 400, "offset %d: %v", syn.Offset, err)
		case errors.As(err, &typ):
			return nil, refused("malformed", 400, "offset %d: field %s: %v", typ.Offset, typ.Field, err)
		}
		return nil, refused("malformed", 400, "%v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, refused("malformed", 400, "offset %d: data after the JSON object", dec.InputOffset())
	}
	return &m, m.check(lim)
}

func (m *Message) check(lim Limits) error {
	switch {
	case m.Version != "4":
		return refused("malformed", 400, "payload version %q: want \"4\" (Alertmanager's webhook)", m.Version)
	case m.GroupKey == "" || len(m.GroupKey) > lim.MaxValueLen:
		return refused("malformed", 400, "groupKey: want 1 to %d bytes, got %d", lim.MaxValueLen, len(m.GroupKey))
	case len(m.Alerts) > lim.MaxAlerts:
		return refused("too_many_alerts", 413, "%d alerts in one group; at most %d (set max_alerts in webhook_configs)", len(m.Alerts), lim.MaxAlerts)
	}
	for i, a := range m.Alerts {
		if a.Status != Firing && a.Status != Resolved {
			return refused("malformed", 400, "alerts[%d].status %q: want firing or resolved", i, a.Status)
		}
		if a.Fingerprint == "" || len(a.Fingerprint) > 64 || a.StartsAt.IsZero() {
			return refused("malformed", 400, "alerts[%d]: needs a fingerprint (at most 64 bytes) and startsAt", i)
		}
		for what, kv := range map[string]map[string]string{"labels": a.Labels, "annotations": a.Annotations} {
			if len(kv) > lim.MaxLabels {
				return refused("malformed", 400, "alerts[%d].%s: %d entries, at most %d", i, what, len(kv), lim.MaxLabels)
			}
			for k, v := range kv {
				if len(k)+len(v) > lim.MaxValueLen {
					return refused("malformed", 400, "alerts[%d].%s.%.40s: over %d bytes", i, what, k, lim.MaxValueLen)
				}
			}
		}
	}
	return nil
}
