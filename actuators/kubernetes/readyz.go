package kubernetes

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/sanitize"
)

// Check is one named readiness condition: Fn returns nil while it holds,
// else why not. Detail, if set, is said beside a check that holds ("ok
// NAME: detail") when not "": something an operator must know that does
// not make the replica unready.
type Check struct {
	Name   string
	Fn     func(ctx context.Context) error
	Detail func() string
}

// Readiness is /readyz: ready while every check holds. The body names each
// check, "ok NAME" or "failed NAME: why", so an operator sees every reason
// at once.
type Readiness struct {
	mu     sync.Mutex
	checks []Check
}

// Add appends a check.
func (r *Readiness) Add(c Check) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checks = append(r.checks, c)
}

// ServeHTTP implements http.Handler.
func (r *Readiness) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	ctx, cancel := context.WithTimeout(req.Context(), time.Second)
	defer cancel()
	r.mu.Lock()
	checks := append([]Check(nil), r.checks...)
	r.mu.Unlock()
	var b strings.Builder
	failed := false
	for _, c := range checks {
		if err := c.Fn(ctx); err != nil {
			failed = true
			fmt.Fprintf(&b, "failed %s: %s\n", c.Name, sanitize.Line(err.Error()))
			continue
		}
		if d := detail(c); d != "" {
			fmt.Fprintf(&b, "ok %s: %s\n", c.Name, sanitize.Line(d))
			continue
		}
		fmt.Fprintf(&b, "ok %s\n", c.Name)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if failed {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_, _ = w.Write([]byte(b.String()))
}

// readiness is the actuator's own checks: the API server answers, discovery
// has answered for every kind, every watch has synced, and a leader has
// completed a pass in its term. Kinds the Role may not list are said beside
// discovery without making the replica unready: every other kind works.
func (a *Actuator) readiness(lock *trackedLock) *Readiness {
	r := &Readiness{}
	if lock != nil {
		r.Add(Check{Name: "apiserver", Fn: func(context.Context) error { return lock.problem() }})
	}
	r.Add(Check{Name: "discovery", Fn: func(context.Context) error { return a.discoveryProblem() }, Detail: a.forbiddenKinds})
	r.Add(Check{Name: "informers", Fn: func(context.Context) error { return a.syncProblem() }})
	r.Add(Check{Name: "leader", Fn: func(context.Context) error { return a.leaderProblem() }})
	return r
}

// forbiddenKinds names the kinds the cluster serves but the actuator's Role
// may not list (an actuator upgraded before its --print-rbac was
// re-applied), and the fix; "" when there are none. Levers that need one
// fail, saying so, until the Role grants it.
func (a *Actuator) forbiddenKinds() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var names []string
	for _, gvk := range Kinds {
		if a.kinds[gvk].status == kindForbidden {
			names = append(names, fmt.Sprintf("%s (%s %s)", gvk.Kind, resources[gvk], gvk.GroupVersion()))
		}
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("forbidden: the actuator's Role may not list %s in %s; levers on them fail until it may: re-apply --print-rbac",
		strings.Join(names, ", "), a.opts.Mapping.Namespace)
}

func detail(c Check) string {
	if c.Detail == nil {
		return ""
	}
	return c.Detail()
}

// lossCheck says in /readyz when the control plane's journal went back
// (a failover lost acknowledged writes), as flagd serve does. The actuator
// stays ready: it still converges on the levers Redis holds now, and
// `stormctl journal sync` on the machine that wrote them restores the rest.
func lossCheck(d *controlplane.LossDetector) Check {
	return Check{Name: "journal", Fn: func(context.Context) error { return nil }, Detail: func() string {
		if r := d.Report(); r != "" {
			return "LOST: " + r
		}
		return ""
	}}
}
