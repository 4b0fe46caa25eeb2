package testenv

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ScrapeConfig returns a scrape_configs section for PromOptions.ExtraConfig:
// one job scraping the targets (host:port, path /metrics) every interval.
func ScrapeConfig(job string, interval time.Duration, targets ...string) string {
	quoted := make([]string, len(targets))
	for i, t := range targets {
		quoted[i] = strconv.Quote(t)
	}
	return fmt.Sprintf("scrape_configs:\n  - job_name: %q\n    scrape_interval: %s\n    scrape_timeout: %s\n"+
		"    static_configs:\n      - targets: [%s]\n", job, interval, interval, strings.Join(quoted, ", "))
}

// WaitScraped waits until every target of job has been scraped and found up,
// and fails the test after timeout.
func (p *Prometheus) WaitScraped(t testing.TB, job string, targets int, timeout time.Duration) {
	t.Helper()
	q := url.Values{"query": {fmt.Sprintf(`count(up{job=%q} == 1)`, job)}}
	deadline := time.Now().Add(timeout)
	for {
		if n, err := p.instant(q); err == nil && n >= float64(targets) {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("prometheus: job %s has not scraped %d targets up within %s (last: %v, %v)", job, targets, timeout, n, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// instant returns the single value of an instant query, or an error.
func (p *Prometheus) instant(q url.Values) (float64, error) {
	resp, err := http.Get(p.URL + "/api/v1/query?" + q.Encode())
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return 0, err
	}
	if len(body.Data.Result) != 1 {
		return 0, fmt.Errorf("%d series", len(body.Data.Result))
	}
	s, _ := body.Data.Result[0].Value[1].(string)
	return strconv.ParseFloat(s, 64)
}
