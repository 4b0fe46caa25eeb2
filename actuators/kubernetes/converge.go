package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stormctl/stormctl/lever"
)

// maxConflicts bounds the retries of a write that lost a race (409).
const maxConflicts = 5

// objectOutcome is what one object's convergence did.
type objectOutcome struct {
	object    string
	applied   []actuation // per lever member
	restored  []actuation
	conflicts []actuation
	failures  []failure
	wrote     bool
}

// actuation is one lever's change (or conflict) on one object.
type actuation struct {
	lever   *lever.Lever // nil for a restore of a lever no longer live
	member  string
	action  string
	changes []FieldChange
	detail  string // a conflict's fields; an application's note (whose calls the object carries)
}

// failure is a lever that could not be applied to an object.
type failure struct {
	lever  *lever.Lever
	member string
	object string
	msg    string
}

// converge brings one object to the state its claims want, in one
// merge patch preconditioned on the resource version it was computed from;
// a conflict re-reads the object and computes again.
func (a *Actuator) converge(ctx context.Context, obj *unstructured.Unstructured, claims []claim) objectOutcome {
	name := objectName(obj) + " in " + obj.GetNamespace()
	for attempt := 0; ; attempt++ {
		out, work, err := plan(obj, claims)
		out.object = name
		if err != nil {
			return failAll(out, obj, claims, err.Error())
		}
		if work == nil {
			return out
		}
		err = a.patch(ctx, obj, work)
		if err == nil {
			out.wrote = true
			return out
		}
		if apierrors.IsConflict(err) && attempt < maxConflicts {
			fresh := &unstructured.Unstructured{}
			fresh.SetGroupVersionKind(obj.GroupVersionKind())
			if gerr := a.opts.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), fresh); gerr != nil {
				return failAll(out, obj, claims, describe("get", obj, gerr))
			}
			obj = fresh
			sleepCtx(ctx, time.Duration(attempt+1)*20*time.Millisecond)
			continue
		}
		return failAll(objectOutcome{object: name}, obj, claims, describe("patch", obj, err))
	}
}

// plan computes the object's wanted state; work is nil when it already is.
func plan(obj *unstructured.Unstructured, claims []claim) (objectOutcome, map[string]any, error) {
	var out objectOutcome
	saved, err := readSaved(obj.Object)
	if err != nil {
		return out, nil, err
	}
	work := runtime.DeepCopyJSON(obj.Object)
	// Restores come first: a lever released in the same pass as another
	// takes over its fields (an edge's route going back to the service-wide
	// lever) must hand back the original values before they are saved again.
	claimed := map[string]*lever.Lever{}
	for _, c := range claims {
		claimed[lever.Member(c.lever.Kind, c.lever.Target)] = c.lever
	}
	for _, member := range slices.Sorted(maps.Keys(saved)) {
		if lost := saved[member].lost; len(lost) > 0 {
			out.conflicts = append(out.conflicts, actuation{lever: claimed[member], member: member,
				action: saved[member].ActionID, detail: describeLost(saved[member], lost)})
		}
		if claimed[member] != nil {
			continue
		}
		action := saved[member].ActionID
		changes, conflicts, err := restore(work, saved, member)
		if err != nil {
			return out, nil, err
		}
		out.restored = append(out.restored, actuation{member: member, action: action, changes: changes})
		if len(conflicts) > 0 {
			out.conflicts = append(out.conflicts, actuation{member: member, action: action,
				detail: describeConflicts(obj.Object, conflicts) + "; left as it is on release"})
		}
	}
	for _, c := range claims {
		member := lever.Member(c.lever.Kind, c.lever.Target)
		if c.keep {
			continue
		}
		changes, conflicts, err := hold(work, saved, member, c.lever.ActionID, c.edits)
		if err != nil {
			return out, nil, err
		}
		if len(changes) > 0 {
			out.applied = append(out.applied, actuation{lever: c.lever, member: member, action: c.lever.ActionID, changes: changes, detail: c.note})
		}
		if len(conflicts) > 0 {
			out.conflicts = append(out.conflicts, actuation{lever: c.lever, member: member, action: c.lever.ActionID, detail: describeConflicts(obj.Object, conflicts)})
		}
	}
	if err := writeSaved(work, saved); err != nil {
		return out, nil, err
	}
	// Only the fields the changes name and the annotation can differ, so
	// they decide whether to write, without comparing whole objects.
	fields := len(out.applied) > 0 || slices.ContainsFunc(out.restored, func(x actuation) bool { return len(x.changes) > 0 })
	if !fields && obj.GetAnnotations()[SavedAnnotation] == annotation(work) {
		return out, nil, nil
	}
	return out, work, nil
}

func annotation(obj map[string]any) string {
	v, _ := lookup(obj, "/metadata/annotations/"+escape(SavedAnnotation))
	s, _ := v.(string)
	return s
}

// patch writes work over obj as a JSON merge patch (KEDA's CRDs reject
// strategic merge) carrying obj's resourceVersion, so a concurrent write is a
// 409 instead of a lost update.
func (a *Actuator) patch(ctx context.Context, obj *unstructured.Unstructured, work map[string]any) error {
	before, err := json.Marshal(obj.Object)
	if err != nil {
		return err
	}
	after, err := json.Marshal(work)
	if err != nil {
		return err
	}
	mp, err := jsonpatch.CreateMergePatch(before, after)
	if err != nil {
		return err
	}
	var body map[string]any
	if err := json.Unmarshal(mp, &body); err != nil {
		return err
	}
	md, _ := body["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		body["metadata"] = md
	}
	md["resourceVersion"] = obj.GetResourceVersion()
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	res := obj.DeepCopy()
	a.opts.Metrics.writes.WithLabelValues(shortNames[obj.GroupVersionKind()]).Inc()
	a.opts.Metrics.written.Inc()
	if err := a.opts.Client.Patch(ctx, res, client.RawPatch(types.MergePatchType, data), client.FieldOwner(FieldManager)); err != nil {
		return err
	}
	res.SetGroupVersionKind(obj.GroupVersionKind())
	a.mu.Lock()
	a.written[string(res.GetUID())] = written{fromRV: obj.GetResourceVersion(), obj: res}
	a.mu.Unlock()
	return nil
}

// describe words an API error as `stormctl status` shows it:
// "forbidden: patch hpa/checkout in shop".
func describe(verb string, obj *unstructured.Unstructured, err error) string {
	what := fmt.Sprintf("%s %s in %s", verb, objectName(obj), obj.GetNamespace())
	switch {
	case apierrors.IsForbidden(err):
		return "forbidden: " + what
	case apierrors.IsNotFound(err):
		return "not found: " + what
	case apierrors.IsInvalid(err) && attemptsRefused(obj, err) != "":
		return attemptsRefused(obj, err)
	case apierrors.IsInvalid(err):
		return "invalid: " + what + ": " + err.Error()
	}
	return what + ": " + err.Error()
}

// failAll turns an error into one failure per lever the object carries, so
// each lever's failure is journaled and shown.
func failAll(out objectOutcome, obj *unstructured.Unstructured, claims []claim, msg string) objectOutcome {
	res := objectOutcome{object: out.object}
	for _, c := range claims {
		res.failures = append(res.failures, failure{lever: c.lever, object: out.object, msg: msg})
	}
	if len(claims) == 0 {
		saved, _ := readSaved(obj.Object)
		for _, m := range slices.Sorted(maps.Keys(saved)) {
			res.failures = append(res.failures, failure{member: m, object: out.object, msg: msg})
		}
		if len(res.failures) == 0 {
			res.failures = append(res.failures, failure{object: out.object, msg: msg})
		}
	}
	return res
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
