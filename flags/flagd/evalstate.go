package flagd

import (
	"context"
	"errors"
	"sync/atomic"

	"connectrpc.com/connect"
	"github.com/open-feature/flagd/core/pkg/evaluator"
	"github.com/open-feature/flagd/core/pkg/logger"
	"github.com/open-feature/flagd/core/pkg/model"
	flagdsync "github.com/open-feature/flagd/core/pkg/sync"
	"google.golang.org/protobuf/types/known/structpb"
)

// evalState is flagd's evaluator over the current full configuration: the
// evaluation and OFREP services read it, the publisher loads each snapshot.
type evalState struct {
	eval   *evaluator.JSON
	loaded atomic.Bool
}

func newEvalState() (*evalState, error) {
	ev, err := newEvaluator(logger.NewLogger(nil, false))
	if err != nil {
		return nil, err
	}
	return &evalState{eval: ev}, nil
}

func (e *evalState) load(raw []byte) error {
	if err := e.eval.SetState(flagdsync.DataSync{FlagData: string(raw), Source: source}); err != nil {
		return err
	}
	e.loaded.Store(true)
	return nil
}

var errNotReady = connect.NewError(connect.CodeUnavailable, errors.New("no lever snapshot loaded from Redis yet"))

// resolution is one evaluation as both protocol versions report it.
type resolution struct {
	value    any
	variant  string
	reason   string
	metadata *structpb.Struct
	fallback bool // the caller's default applies (flagd's FALLBACK)
}

// resolveAny evaluates key for a request context; v1 marks the older
// protocol, which reports a missing default as FLAG_NOT_FOUND, as flagd does.
func (e *evalState) resolveAny(ctx context.Context, key string, evalCtx *structpb.Struct, v1 bool) (resolution, error) {
	if !e.loaded.Load() {
		return resolution{}, errNotReady
	}
	if v1 {
		//lint:ignore SA1029 flagd's evaluator reads this exact string key
		ctx = context.WithValue(ctx, evaluator.ProtoVersionKey, "v1")
	}
	r := e.eval.ResolveAsAnyValue(ctx, "", key, evalCtx.AsMap())
	meta, _ := structpb.NewStruct(r.Metadata)
	if r.Error != nil {
		return resolution{}, errFormat(r.Error)
	}
	return resolution{value: r.Value, variant: r.Variant, reason: r.Reason, metadata: meta,
		fallback: r.Reason == model.FallbackReason}, nil
}

// errFormat maps flagd's evaluator errors to connect codes as flagd does.
func errFormat(err error) error {
	msg := errors.New(model.GetErrorMessage(err.Error()))
	switch err.Error() {
	case model.FlagNotFoundErrorCode, model.FlagDisabledErrorCode:
		return connect.NewError(connect.CodeNotFound, msg)
	case model.TypeMismatchErrorCode:
		return connect.NewError(connect.CodeInvalidArgument, msg)
	case model.ParseErrorCode:
		return connect.NewError(connect.CodeDataLoss, msg)
	}
	return connect.NewError(connect.CodeUnknown, msg)
}

// typed checks that a resolution has the type the caller asked for.
func typed[T any](r resolution) (T, error) {
	var zero T
	if r.fallback {
		return zero, nil
	}
	x := r.value
	if n, isNum := x.(float64); isNum {
		// flagd's numbers are JSON numbers: an int flag resolves as a float
		// too, as flagd's own ResolveFloat does.
		if _, wantInt := any(zero).(int64); wantInt {
			x = int64(n)
		}
	}
	v, ok := x.(T)
	if !ok {
		return zero, connect.NewError(connect.CodeInvalidArgument, errors.New(model.GetErrorMessage(model.TypeMismatchErrorCode)))
	}
	return v, nil
}
