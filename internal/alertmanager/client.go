// Package alertmanager reads Alertmanager's API v2 for the dashboard: the
// alerts it holds, silenced or not, bounded in bytes and in count.
package alertmanager

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/yamlfile"
)

// Bounds on one answer: what a dashboard can show is far less, and a
// hostile or broken server must not cost more.
const (
	DefaultMaxBytes  = 4 << 20
	DefaultMaxAlerts = 200
	DefaultTimeout   = 5 * time.Second
)

// Alert is one alert of GET /api/v2/alerts (gettableAlert in Alertmanager's
// api/v2/openapi.yaml); the fields the dashboard shows.
type Alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	Fingerprint string            `json:"fingerprint"`
	Status      struct {
		// State is active, suppressed (silenced or inhibited) or unprocessed.
		State       string   `json:"state"`
		SilencedBy  []string `json:"silencedBy"`
		InhibitedBy []string `json:"inhibitedBy"`
	} `json:"status"`
}

// Silenced reports whether a silence holds the alert.
func (a *Alert) Silenced() bool { return len(a.Status.SilencedBy) > 0 }

// Answer is one read of the alerts.
type Answer struct {
	Alerts []Alert // at most MaxAlerts, firing first then by start
	// More counts the alerts past MaxAlerts, not kept.
	More int
}

// Client reads one Alertmanager. The zero bounds take the defaults.
type Client struct {
	URL       string // e.g. http://alertmanager:9093 (any path prefix kept)
	HTTP      *http.Client
	MaxBytes  int64
	MaxAlerts int
}

// Addr is the URL without credentials, for messages.
func (c *Client) Addr() string {
	if u, err := url.Parse(c.URL); err == nil {
		return u.Redacted()
	}
	return c.URL
}

// Alerts reads every alert Alertmanager holds, silenced and inhibited
// ones included. The answer is refused past MaxBytes (or nesting and node
// limits of the bounded reader) and kept to MaxAlerts.
func (c *Client) Alerts(ctx context.Context) (Answer, error) {
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	u := strings.TrimRight(c.URL, "/") + "/api/v2/alerts?active=true&silenced=true&inhibited=true&unprocessed=true"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Answer{}, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Answer{}, fmt.Errorf("GET /api/v2/alerts: HTTP %d", resp.StatusCode)
	}
	lim := yamlfile.DefaultLimits()
	lim.MaxBytes = c.MaxBytes
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = DefaultMaxBytes
	}
	// A large Alertmanager holds thousands of alerts of ~20 values each;
	// the byte cap bounds the answer, the node cap only its shape.
	lim.MaxNodes = max(lim.MaxNodes, int(lim.MaxBytes/8))
	name := "alertmanager answer"
	data, err := yamlfile.ReadAll(name, resp.Body, lim)
	if err != nil {
		return Answer{}, err
	}
	if err := yamlfile.Check(name, data, lim); err != nil {
		return Answer{}, err
	}
	var all []Alert
	if err := json.Unmarshal(data, &all); err != nil {
		return Answer{}, fmt.Errorf("%s: %w", name, err)
	}
	return keep(all, c.MaxAlerts), nil
}

// keep orders the alerts, active before suppressed and newest first, and
// keeps at most most of them.
func keep(all []Alert, most int) Answer {
	if most <= 0 {
		most = DefaultMaxAlerts
	}
	rank := func(a *Alert) int {
		if a.Status.State == "active" {
			return 0
		}
		return 1
	}
	sortAlerts(all, rank)
	if len(all) <= most {
		return Answer{Alerts: all}
	}
	return Answer{Alerts: all[:most:most], More: len(all) - most}
}

// sortAlerts orders by rank, then newest first, then by fingerprint so
// that the list does not jump between reads.
func sortAlerts(as []Alert, rank func(*Alert) int) {
	slices.SortStableFunc(as, func(a, b Alert) int {
		return cmp.Or(cmp.Compare(rank(&a), rank(&b)), b.StartsAt.Compare(a.StartsAt), cmp.Compare(a.Fingerprint, b.Fingerprint))
	})
}
