package flagd

import (
	"context"
	"net/http"

	"buf.build/gen/go/open-feature/flagd/connectrpc/go/flagd/evaluation/v1/evaluationv1connect"
	"buf.build/gen/go/open-feature/flagd/connectrpc/go/flagd/evaluation/v2/evaluationv2connect"
	v1 "buf.build/gen/go/open-feature/flagd/protocolbuffers/go/flagd/evaluation/v1"
	v2 "buf.build/gen/go/open-feature/flagd/protocolbuffers/go/flagd/evaluation/v2"
	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"
)

// evalHandler serves flagd.evaluation.v1 and v2 on one port, in gRPC,
// gRPC-Web and the Connect protocol (connect-go handlers speak all three).
func (s *Server) evalHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(evaluationv1connect.NewServiceHandler(&evalV1{s}))
	mux.Handle(evaluationv2connect.NewServiceHandler(&evalV2{s}))
	return mux
}

type evalV1 struct{ s *Server }

// resolve1 is one v1 unary resolution of type T.
func resolve1[T any](s *Server, ctx context.Context, key string, c *structpb.Struct) (T, resolution, error) {
	r, err := s.eval.resolveAny(ctx, key, c, true)
	s.metrics.evaluation("v1", err)
	if err != nil {
		var zero T
		return zero, r, err
	}
	v, err := typed[T](r)
	return v, r, err
}

func (e *evalV1) ResolveBoolean(ctx context.Context, req *connect.Request[v1.ResolveBooleanRequest]) (*connect.Response[v1.ResolveBooleanResponse], error) {
	v, r, err := resolve1[bool](e.s, ctx, req.Msg.GetFlagKey(), req.Msg.GetContext())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&v1.ResolveBooleanResponse{Value: v, Reason: r.reason, Variant: r.variant, Metadata: r.metadata}), nil
}

func (e *evalV1) ResolveString(ctx context.Context, req *connect.Request[v1.ResolveStringRequest]) (*connect.Response[v1.ResolveStringResponse], error) {
	v, r, err := resolve1[string](e.s, ctx, req.Msg.GetFlagKey(), req.Msg.GetContext())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&v1.ResolveStringResponse{Value: v, Reason: r.reason, Variant: r.variant, Metadata: r.metadata}), nil
}

func (e *evalV1) ResolveInt(ctx context.Context, req *connect.Request[v1.ResolveIntRequest]) (*connect.Response[v1.ResolveIntResponse], error) {
	v, r, err := resolve1[int64](e.s, ctx, req.Msg.GetFlagKey(), req.Msg.GetContext())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&v1.ResolveIntResponse{Value: v, Reason: r.reason, Variant: r.variant, Metadata: r.metadata}), nil
}

func (e *evalV1) ResolveFloat(ctx context.Context, req *connect.Request[v1.ResolveFloatRequest]) (*connect.Response[v1.ResolveFloatResponse], error) {
	v, r, err := resolve1[float64](e.s, ctx, req.Msg.GetFlagKey(), req.Msg.GetContext())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&v1.ResolveFloatResponse{Value: v, Reason: r.reason, Variant: r.variant, Metadata: r.metadata}), nil
}

func (e *evalV1) ResolveObject(ctx context.Context, req *connect.Request[v1.ResolveObjectRequest]) (*connect.Response[v1.ResolveObjectResponse], error) {
	m, r, err := resolve1[map[string]any](e.s, ctx, req.Msg.GetFlagKey(), req.Msg.GetContext())
	if err != nil {
		return nil, err
	}
	obj, _ := structpb.NewStruct(m)
	return connect.NewResponse(&v1.ResolveObjectResponse{Value: obj, Reason: r.reason, Variant: r.variant, Metadata: r.metadata}), nil
}

// ResolveAll evaluates every flag; flags whose caller's default applies are
// left out, as flagd does.
func (e *evalV1) ResolveAll(ctx context.Context, req *connect.Request[v1.ResolveAllRequest]) (*connect.Response[v1.ResolveAllResponse], error) {
	if !e.s.eval.loaded.Load() {
		return nil, errNotReady
	}
	all, setMeta, err := e.s.eval.eval.ResolveAllValues(ctx, "", req.Msg.GetContext().AsMap())
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, err)
	}
	res := &v1.ResolveAllResponse{Flags: map[string]*v1.AnyFlag{}}
	res.Metadata, _ = structpb.NewStruct(setMeta)
	for _, r := range all {
		f := &v1.AnyFlag{Reason: r.Reason, Variant: r.Variant}
		switch v := r.Value.(type) {
		case bool:
			f.Value = &v1.AnyFlag_BoolValue{BoolValue: v}
		case string:
			f.Value = &v1.AnyFlag_StringValue{StringValue: v}
		case float64:
			f.Value = &v1.AnyFlag_DoubleValue{DoubleValue: v}
		default:
			continue
		}
		f.Metadata, _ = structpb.NewStruct(r.Metadata)
		res.Flags[r.FlagKey] = f
	}
	return connect.NewResponse(res), nil
}

func (e *evalV1) EventStream(ctx context.Context, req *connect.Request[v1.EventStreamRequest], st *connect.ServerStream[v1.EventStreamResponse]) error {
	return e.s.eventStream(ctx, "eval-v1", req.Peer(), req.Header(), func(typ string, data *structpb.Struct) error {
		return st.Send(&v1.EventStreamResponse{Type: typ, Data: data})
	})
}

type evalV2 struct{ s *Server }

// resolve2 is one v2 unary resolution; ok is false when the caller's
// default applies (v2 leaves value and variant unset, reason DEFAULT).
func resolve2[T any](s *Server, ctx context.Context, key string, c *structpb.Struct) (v *T, variant *string, r resolution, err error) {
	r, err = s.eval.resolveAny(ctx, key, c, false)
	s.metrics.evaluation("v2", err)
	if err != nil {
		return nil, nil, r, err
	}
	if r.fallback {
		r.reason = "DEFAULT"
		return nil, nil, r, nil
	}
	x, err := typed[T](r)
	if err != nil {
		return nil, nil, r, err
	}
	if r.variant != "" {
		variant = &r.variant
	}
	return &x, variant, r, nil
}

func (e *evalV2) ResolveBoolean(ctx context.Context, req *connect.Request[v2.ResolveBooleanRequest]) (*connect.Response[v2.ResolveBooleanResponse], error) {
	v, variant, r, err := resolve2[bool](e.s, ctx, req.Msg.GetFlagKey(), req.Msg.GetContext())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&v2.ResolveBooleanResponse{Value: v, Reason: r.reason, Variant: variant, Metadata: r.metadata}), nil
}

func (e *evalV2) ResolveString(ctx context.Context, req *connect.Request[v2.ResolveStringRequest]) (*connect.Response[v2.ResolveStringResponse], error) {
	v, variant, r, err := resolve2[string](e.s, ctx, req.Msg.GetFlagKey(), req.Msg.GetContext())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&v2.ResolveStringResponse{Value: v, Reason: r.reason, Variant: variant, Metadata: r.metadata}), nil
}

func (e *evalV2) ResolveInt(ctx context.Context, req *connect.Request[v2.ResolveIntRequest]) (*connect.Response[v2.ResolveIntResponse], error) {
	v, variant, r, err := resolve2[int64](e.s, ctx, req.Msg.GetFlagKey(), req.Msg.GetContext())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&v2.ResolveIntResponse{Value: v, Reason: r.reason, Variant: variant, Metadata: r.metadata}), nil
}

func (e *evalV2) ResolveFloat(ctx context.Context, req *connect.Request[v2.ResolveFloatRequest]) (*connect.Response[v2.ResolveFloatResponse], error) {
	v, variant, r, err := resolve2[float64](e.s, ctx, req.Msg.GetFlagKey(), req.Msg.GetContext())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&v2.ResolveFloatResponse{Value: v, Reason: r.reason, Variant: variant, Metadata: r.metadata}), nil
}

func (e *evalV2) ResolveObject(ctx context.Context, req *connect.Request[v2.ResolveObjectRequest]) (*connect.Response[v2.ResolveObjectResponse], error) {
	m, variant, r, err := resolve2[map[string]any](e.s, ctx, req.Msg.GetFlagKey(), req.Msg.GetContext())
	if err != nil {
		return nil, err
	}
	var obj *structpb.Struct
	if m != nil {
		obj, _ = structpb.NewStruct(*m)
	}
	return connect.NewResponse(&v2.ResolveObjectResponse{Value: obj, Reason: r.reason, Variant: variant, Metadata: r.metadata}), nil
}

func (e *evalV2) EventStream(ctx context.Context, req *connect.Request[v2.EventStreamRequest], st *connect.ServerStream[v2.EventStreamResponse]) error {
	return e.s.eventStream(ctx, "eval-v2", req.Peer(), req.Header(), func(typ string, data *structpb.Struct) error {
		return st.Send(&v2.EventStreamResponse{Type: typ, Data: data})
	})
}
