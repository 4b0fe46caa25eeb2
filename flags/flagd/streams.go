package flagd

import (
	"context"
	"errors"
	"net/http"
	"time"

	"buf.build/gen/go/open-feature/flagd/connectrpc/go/flagd/sync/v1/syncv1connect"
	syncv1 "buf.build/gen/go/open-feature/flagd/protocolbuffers/go/flagd/sync/v1"
	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"
)

// SelectorHeader carries a client's selector, as flagd reads it.
const SelectorHeader = "Flagd-Selector"

// flagd's event types.
const (
	eventReady     = "provider_ready"
	eventChange    = "configuration_change"
	eventKeepAlive = "keep_alive"
)

// eventStream follows the hub for one evaluation client: provider_ready
// once a snapshot is loaded, then configuration_change naming the changed
// flags after each push, and a keep-alive every 20s.
func (s *Server) eventStream(ctx context.Context, protocol string, peer connect.Peer, h http.Header, send func(string, *structpb.Struct) error) error {
	// flagd's RPC providers send their selector, when one is configured,
	// as a header of the event stream; the request itself is empty.
	sub, done, err := s.hub.Subscribe(protocol, peer.Addr, h.Get(SelectorHeader) != "")
	if err != nil {
		return connect.NewError(connect.CodeResourceExhausted, err)
	}
	defer done()
	defer s.withdraw(sub)
	s.metrics.streamOpened(protocol)
	defer s.metrics.streamClosed(protocol)
	last, err := s.hub.WaitFirst(ctx)
	if err != nil {
		return s.streamEnded()
	}
	if err := send(eventReady, nil); err != nil {
		return err
	}
	s.sent(sub, last)
	keepAlive := time.NewTicker(keepAliveEvery)
	defer keepAlive.Stop()
	for {
		select {
		case <-ctx.Done():
			return s.streamEnded()
		case <-keepAlive.C:
			if err := send(eventKeepAlive, nil); err != nil {
				return err
			}
		case <-sub.Wake():
			cur := s.hub.Current()
			if cur == last {
				continue
			}
			changed := cur.ChangedSince(last)
			last = cur
			if len(changed) == 0 {
				s.sent(sub, cur) // it evaluates here: nothing to tell it
				continue
			}
			flags := map[string]any{}
			for _, k := range changed {
				flags[k] = map[string]any{"type": "update"}
			}
			data, _ := structpb.NewStruct(map[string]any{"flags": flags})
			if err := send(eventChange, data); err != nil {
				return err
			}
			s.sent(sub, cur)
			s.metrics.pushed(protocol, cur)
		}
	}
}

// syncHandler serves flagd.sync.v1.FlagSyncService.
func (s *Server) syncHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(syncv1connect.NewFlagSyncServiceHandler(&syncService{s}))
	return mux
}

type syncService struct{ s *Server }

// selectorOf reads the selector from the Flagd-Selector header, else from
// the deprecated request field.
func selectorOf(h http.Header, field string) (Selector, error) {
	expr := h.Get(SelectorHeader)
	if expr == "" {
		expr = field
	}
	sel, err := ParseSelector(expr)
	if err != nil {
		return Selector{}, connect.NewError(connect.CodeInvalidArgument, err)
	}
	return sel, nil
}

// SyncFlags streams a full, validated configuration for the client's
// selector on connect and after every change; a configuration equal to the
// last one sent is not sent again.
func (y *syncService) SyncFlags(ctx context.Context, req *connect.Request[syncv1.SyncFlagsRequest], st *connect.ServerStream[syncv1.SyncFlagsResponse]) error {
	s := y.s
	//lint:ignore SA1019 older providers still send the selector in the request
	sel, err := selectorOf(req.Header(), req.Msg.GetSelector())
	if err != nil {
		return err
	}
	//lint:ignore SA1019 older providers still send the selector in the request
	identified := req.Msg.GetProviderId() != "" || req.Header().Get(SelectorHeader) != "" || req.Msg.GetSelector() != ""
	sub, done, err := s.hub.Subscribe("sync", peerName(req.Msg.GetProviderId(), req.Peer().Addr), identified)
	if err != nil {
		return connect.NewError(connect.CodeResourceExhausted, err)
	}
	defer done()
	defer s.withdraw(sub)
	s.metrics.streamOpened("sync")
	defer s.metrics.streamClosed("sync")
	cur, err := s.hub.WaitFirst(ctx)
	if err != nil {
		return s.streamEnded()
	}
	var sent string
	for {
		if raw, err := cur.Config(sel); err != nil {
			s.opts.Log.Error("flagd serve: not sending an invalid configuration", "err", err)
		} else if string(raw) != sent {
			if err := st.Send(&syncv1.SyncFlagsResponse{FlagConfiguration: string(raw)}); err != nil {
				return err
			}
			sent = string(raw)
			s.sent(sub, cur)
			s.metrics.pushed("sync", cur)
		}
		select {
		case <-ctx.Done():
			return s.streamEnded()
		case <-sub.Wake():
			cur = s.hub.Current()
		}
	}
}

// FetchAllFlags returns the configuration for the client's selector once
// the first snapshot is loaded.
func (y *syncService) FetchAllFlags(ctx context.Context, req *connect.Request[syncv1.FetchAllFlagsRequest]) (*connect.Response[syncv1.FetchAllFlagsResponse], error) {
	//lint:ignore SA1019 older providers still send the selector in the request
	sel, err := selectorOf(req.Header(), req.Msg.GetSelector())
	if err != nil {
		return nil, err
	}
	cur, err := y.s.hub.WaitFirst(ctx)
	if err != nil {
		return nil, connect.NewError(connect.CodeUnavailable, errors.New("no lever snapshot loaded from Redis yet"))
	}
	raw, err := cur.Config(sel)
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, err)
	}
	return connect.NewResponse(&syncv1.FetchAllFlagsResponse{FlagConfiguration: string(raw)}), nil
}

// GetMetadata returns the flag set's metadata (deprecated in flagd, still
// called by older providers).
//
//lint:ignore SA1019 served for the older providers that still call it
func (y *syncService) GetMetadata(ctx context.Context, _ *connect.Request[syncv1.GetMetadataRequest]) (*connect.Response[syncv1.GetMetadataResponse], error) {
	m := map[string]any{"flagSetId": FlagSetID}
	if cur := y.s.hub.Current(); cur != nil {
		m["version"] = cur.Version
	}
	md, _ := structpb.NewStruct(m)
	//lint:ignore SA1019 served for the older providers that still call it
	return connect.NewResponse(&syncv1.GetMetadataResponse{Metadata: md}), nil
}

func peerName(providerID, addr string) string {
	if providerID != "" {
		return providerID
	}
	return addr
}
