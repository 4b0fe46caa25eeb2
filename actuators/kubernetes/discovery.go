package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kindStatus is what discovery last said about a kind.
type kindStatus int

const (
	kindUnknown   kindStatus = iota // discovery has not answered (API server down, 5xx, timeout)
	kindServed                      // served and watched
	kindNotServed                   // discovery answered: the cluster does not serve it
	kindForbidden                   // served, but the actuator's Role may not list it
)

// availability says which kinds a pass can use: availServed, or why not.
// A kind missing from it is not served.
type availability map[schema.GroupVersionKind]string

const availServed = "served"

func (v availability) ok(gvk schema.GroupVersionKind) bool { return v[gvk] == availServed }

// why words a kind the pass cannot use, for a lever that needs it.
func (v availability) why(gvk schema.GroupVersionKind) string {
	if r := v[gvk]; r != "" && r != availServed {
		return r
	}
	return fmt.Sprintf("the cluster serves no %s (%s): is its CRD installed?", gvk.Kind, gvk.GroupVersion())
}

// kindState is one kind's discovery outcome.
type kindState struct {
	status kindStatus
	err    error       // the last discovery error, if any
	synced func() bool // the informer's HasSynced, once watched
}

// newBackoff is the actuator's retry schedule: 200 ms doubling to a cap,
// fully jittered so replicas and restarts do not retry in step.
func newBackoff(limit time.Duration) wait.Backoff {
	return wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 1, Steps: 1 << 30, Cap: limit}
}

// WatchKinds finds out which kinds the cluster serves and watches each
// served one, until ctx ends. A kind the cluster answers "not served" for
// is asked about again every resync period (its CRD may be installed
// later); any other discovery error — the API server down or failing — is
// retried with backoff, and the kind counts as neither served nor not
// served meanwhile, so no pass mistakes an outage for a missing CRD. It runs
// on every replica, leader or not, so a new leader starts with a warm cache.
func (a *Actuator) WatchKinds(ctx context.Context) error {
	bo := newBackoff(5 * time.Second)
	for {
		next := a.opts.Resync
		if a.resolveKinds(ctx) {
			next = bo.Step()
		} else {
			bo = newBackoff(5 * time.Second)
		}
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// resolveKinds asks discovery about every kind not yet watched, starts
// watching those now served, and says whether any is still unknown.
func (a *Actuator) resolveKinds(ctx context.Context) (pending bool) {
	for _, gvk := range Kinds {
		a.mu.Lock()
		prev := a.kinds[gvk]
		a.mu.Unlock()
		if prev.status == kindServed {
			continue
		}
		next := kindState{status: kindUnknown}
		_, err := a.opts.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		var ferr error
		if err == nil {
			ferr = a.forbidden(ctx, gvk)
		}
		switch {
		case ferr != nil:
			// An optional kind the Role does not grant (an actuator upgraded
			// before its --print-rbac was re-applied) must not hold back
			// every other kind: its watch would never sync. Levers that need
			// it fail, saying so; it is asked about again every resync.
			next = kindState{status: kindForbidden, err: ferr}
			if prev.status != kindForbidden {
				a.opts.Log.Warn("kind forbidden; levers on it will be reported as failed", "kind", gvk.String(), "err", next.err)
			}
		case err == nil:
			synced, werr := a.watch(ctx, gvk)
			if werr != nil {
				next.err = fmt.Errorf("watch %s: %w", resources[gvk], werr)
				break
			}
			next = kindState{status: kindServed, synced: synced}
			a.opts.Log.Info("kind served; watching it", "kind", gvk.String())
		case meta.IsNoMatchError(err):
			next = kindState{status: kindNotServed, err: err}
			if prev.status != kindNotServed {
				a.opts.Log.Warn("kind not served; levers on it will be reported as failed", "kind", gvk.String(), "err", err)
			}
		case prev.status == kindNotServed || prev.status == kindForbidden:
			// A re-check that failed keeps the last answer.
			a.opts.Log.Warn("discovery re-check failed", "kind", gvk.String(), "err", err)
			continue
		default:
			next.err = err
			a.opts.Log.Warn("discovery failed; retrying with backoff", "kind", gvk.String(), "err", err)
		}
		pending = pending || next.status == kindUnknown
		a.mu.Lock()
		a.kinds[gvk] = next
		a.mu.Unlock()
		if next.status == kindServed {
			a.Poke()
		}
	}
	return pending
}

// watch starts (without waiting for it to sync) the informer of a kind and
// pokes the actuator on its events.
func (a *Actuator) watch(ctx context.Context, gvk schema.GroupVersionKind) (func() bool, error) {
	if a.opts.Cache == nil {
		return func() bool { return true }, nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	inf, err := a.opts.Cache.GetInformer(ctx, u, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, err
	}
	poke := func(any) { a.Poke() }
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: poke, DeleteFunc: poke, UpdateFunc: func(_, n any) { poke(n) },
	}); err != nil {
		return nil, err
	}
	return inf.HasSynced, nil
}

// discoveryProblem says which kinds discovery has not answered for, and why.
func (a *Actuator) discoveryProblem() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var parts []string
	for _, gvk := range Kinds {
		if st := a.kinds[gvk]; st.status == kindUnknown {
			msg := "not asked yet"
			if st.err != nil {
				msg = st.err.Error()
			}
			parts = append(parts, fmt.Sprintf("%s (%s): %s", gvk.Kind, gvk.GroupVersion(), msg))
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return errors.New("cannot tell whether the cluster serves " + strings.Join(parts, "; "))
}

// syncProblem says which watched kinds' informers have not synced.
func (a *Actuator) syncProblem() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var names []string
	for _, gvk := range Kinds {
		if st := a.kinds[gvk]; st.status == kindServed && !st.synced() {
			names = append(names, resources[gvk])
		}
	}
	if len(names) == 0 {
		return nil
	}
	return fmt.Errorf("watches of %s not synced", strings.Join(names, ", "))
}

// served is which kinds the cluster serves, once discovery has answered for
// every kind and every watch has synced; until then a pass would act on a
// partial picture (or restore nothing it should), so it waits.
func (a *Actuator) served() (availability, error) {
	if err := a.discoveryProblem(); err != nil {
		return nil, err
	}
	if err := a.syncProblem(); err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	out := availability{}
	for _, gvk := range Kinds {
		switch st := a.kinds[gvk]; st.status {
		case kindServed:
			out[gvk] = availServed
		case kindForbidden:
			out[gvk] = fmt.Sprintf("forbidden: list %s in %s: the actuator's Role lacks it (re-apply --print-rbac)", resources[gvk], a.opts.Mapping.Namespace)
		}
	}
	return out, nil
}

// forbidden asks the API server for one object of the kind, as the watch
// would list them, and returns the error if that is forbidden. Asked only
// while the kind is not watched, never per pass.
func (a *Actuator) forbidden(ctx context.Context, gvk schema.GroupVersionKind) error {
	if a.opts.APIReader == nil {
		return nil
	}
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	err := a.opts.APIReader.List(ctx, l, client.InNamespace(a.opts.Mapping.Namespace), client.Limit(1))
	if apierrors.IsForbidden(err) {
		return err
	}
	return nil
}
