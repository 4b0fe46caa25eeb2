package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/controlplane"
)

// `stormctl status` says what a running actuator could not do, with the
// cluster's text defanged, and -o json carries the reports.
func TestStatusShowsActuatorProblems(t *testing.T) {
	r, s := seededStore(t)
	st := controlplane.ComponentStatus{Component: kubeActuatorComponent, Instance: "actuator-kubernetes/a1", Time: time.Now().UTC(),
		Problems: []string{"forbidden: patch hpa/checkout in shop", "hpa/x in shop: /spec is \"\x1b[2J\u202e\", set by field manager kubectl-edit"}}
	if err := s.SetStatus(context.Background(), st, time.Minute); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"STORMCTL_REDIS_URL": r.URL("", "")}
	_, stderr, code := runCLI(t, env, "status")
	if code != 0 || !strings.Contains(stderr, "actuator: forbidden: patch hpa/checkout in shop\n") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if strings.ContainsAny(stderr, "\x1b\u202e") || !strings.Contains(stderr, `\u001b[2J\u202e`) {
		t.Errorf("control characters reached the terminal: %q", stderr)
	}
	out, _, _ := runCLI(t, env, "status", "-o", "json")
	if !strings.Contains(out, `"component": "actuator:kubernetes"`) || !strings.Contains(out, "forbidden: patch hpa/checkout in shop") {
		t.Errorf("json lacks the actuator report:\n%s", out)
	}
}
