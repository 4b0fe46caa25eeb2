package flagd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/open-feature/flagd/core/pkg/evaluator"
	"github.com/open-feature/flagd/core/pkg/logger"
	"github.com/open-feature/flagd/core/pkg/store"
	flagdsync "github.com/open-feature/flagd/core/pkg/sync"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/stormctl/stormctl/lever"
)

// source is the name of the one flag source in every store.
const source = "stormctl"

// schemaWarning is how flagd's evaluator reports a configuration that does
// not conform to its schema: it logs and loads it anyway, and providers
// that validate strictly reject it.
const schemaWarning = "does not conform to the schema"

// newEvaluator returns flagd's own evaluator over a store of one source.
func newEvaluator(log *logger.Logger) (*evaluator.JSON, error) {
	s, err := store.NewStore(log, []string{source})
	if err != nil {
		return nil, err
	}
	return evaluator.NewJSON(log, s), nil
}

// Validator checks a configuration the way clients will read it, so that a
// configuration they would reject (and silently ignore, keeping the old
// one) is never sent.
type Validator struct {
	mu   sync.Mutex
	eval *evaluator.JSON
	logs *observer.ObservedLogs // what flagd's evaluator warned about
}

// NewValidator builds a scratch evaluator whose warnings it reads.
func NewValidator() (*Validator, error) {
	core, logs := observer.New(zap.WarnLevel)
	ev, err := newEvaluator(logger.NewLogger(zap.New(core), false))
	if err != nil {
		return nil, err
	}
	return &Validator{eval: ev, logs: logs}, nil
}

// Validate loads raw into flagd's evaluator, refusing it when the evaluator
// rejects it or finds it off flagd's schema (flagd itself only warns), and
// evaluates every flag for an empty context and each lever's flags for that
// lever's context, comparing each value with what the native provider's
// most-specific match gives.
func (v *Validator) Validate(raw []byte, in Input, sel Selector) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.logs.TakeAll()
	if err := v.eval.SetState(flagdsync.DataSync{FlagData: string(raw), Source: source}); err != nil {
		return fmt.Errorf("flagd's evaluator rejects the configuration: %w", err)
	}
	for _, e := range v.logs.TakeAll() {
		if strings.Contains(e.Message, schemaWarning) {
			return fmt.Errorf("flagd's evaluator: %s", e.Message)
		}
	}
	byKind, _ := rules(in.Levers, sel)
	var errs []error
	check := func(kind lever.Kind, service, dependency string) {
		for _, f := range lever.Table {
			if kind != "" && f.Kind != kind {
				continue
			}
			if err := v.checkFlag(f, byKind[f.Kind], in, service, dependency); err != nil {
				errs = append(errs, err)
			}
		}
	}
	check("", "", "")
	// Each rule is checked for its own context and the flags of its kind:
	// the rules of other kinds were checked for theirs.
	for kind, rs := range byKind {
		for _, r := range rs {
			check(kind, r.scope.Service, r.scope.Dependency)
		}
	}
	return errors.Join(errs...)
}

// checkFlag evaluates one flag for one context and compares the result with
// lever.Match over the same rules.
func (v *Validator) checkFlag(f lever.Flag, rs []rule, in Input, service, dependency string) error {
	ctx := map[string]any{}
	if service != "" {
		ctx["service"] = service
	}
	if dependency != "" {
		ctx["dependency"] = dependency
	}
	want, wantOK := expected(f, rs, in, service, dependency)
	got := v.eval.ResolveAsAnyValue(context.Background(), "validate", f.Key, ctx)
	if got.Error != nil {
		return fmt.Errorf("flag %s for service=%q dependency=%q: flagd's evaluator says %v", f.Key, service, dependency, got.Error)
	}
	if !wantOK {
		if got.Value != nil {
			return fmt.Errorf("flag %s for service=%q dependency=%q: got %v, want the caller's default", f.Key, service, dependency, got.Value)
		}
		return nil
	}
	if n, ok := got.Value.(float64); ok && f.Type == lever.Int {
		got.Value = int64(n)
	}
	if got.Value != want {
		return fmt.Errorf("flag %s for service=%q dependency=%q: flagd's evaluator gives %v (%T), the lever says %v", f.Key, service, dependency, got.Value, got.Value, want)
	}
	return nil
}

// expected is the value the native provider serves: the fail-safe while
// stale, else the most specific lever, else the flag's absent value.
func expected(f lever.Flag, rs []rule, in Input, service, dependency string) (any, bool) {
	if fs, ok := in.FailSafe[f.Key]; ok && in.Stale {
		if v, ok := f.Coerce(fs); ok {
			return v.Get(f.Type), true
		}
	}
	r, ok := lever.Match(f.Kind, service, dependency, func(sc lever.Scope) (rule, bool) {
		for _, r := range rs {
			if r.scope == sc {
				return r, true
			}
		}
		return rule{}, false
	})
	if ok {
		v, err := f.Value(r.src.Value)
		return v, err == nil
	}
	av, ok := f.AbsentValue()
	return av.Get(f.Type), ok
}
