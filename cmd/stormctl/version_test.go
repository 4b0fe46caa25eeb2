package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// The release build stamps version, commit and date (-X main.version=...);
// `stormctl version` prints them, in text and JSON.
func TestVersionShowsReleaseStamp(t *testing.T) {
	defer func(v, c, d string) { version, commit, date = v, c, d }(version, commit, date)
	version, commit, date = "1.4.0", "0123456789abcdef0123456789abcdef01234567", "2026-12-01T10:00:00Z"
	out, _, code := runCLI(t, nil, "version")
	if code != 0 || !strings.HasPrefix(out, "stormctl 1.4.0 0123456789ab 2026-12-01T10:00:00Z (go") {
		t.Fatalf("exit %d, out %q", code, out)
	}
	out, _, code = runCLI(t, nil, "version", "-o", "json")
	var v versionInfo
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil {
		t.Fatalf("exit %d, %v: %s", code, err, out)
	}
	if v.Version != "1.4.0" || v.Commit != commit || v.Date != date || v.Kubernetes != withKubernetes {
		t.Errorf("json: %+v", v)
	}
}
