package flagd_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"buf.build/gen/go/open-feature/flagd/connectrpc/go/flagd/evaluation/v1/evaluationv1connect"
	v1 "buf.build/gen/go/open-feature/flagd/protocolbuffers/go/flagd/evaluation/v1"
	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/stormctl/stormctl/flags/flagd"
	"github.com/stormctl/stormctl/lever"
)

func post(t *testing.T, url, body string, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestOFREP: single and bulk evaluation, the bulk ETag answered with 304
// until a lever changes, and hostile bodies refused with a reason.
func TestOFREP(t *testing.T) {
	e := startEnv(t, flagd.Options{})
	e.w.set(t, lever.Shed, "search", "20", time.Hour)
	base := "http://" + e.srv.Addr("ofrep") + "/ofrep/v1/evaluate/flags"
	ctx := `{"context":{"targetingKey":"t","service":"search"}}`
	eventually(t, 5*time.Second, "OFREP serving the lever", func() bool {
		code, _, body := post(t, base+"/"+lever.ShedPercent, ctx, nil)
		return code == http.StatusOK && strings.Contains(body, `"value":20`)
	})
	code, hdr, body := post(t, base, ctx, nil)
	etag := hdr.Get("ETag")
	if code != http.StatusOK || etag == "" || !strings.Contains(body, lever.RetriesEnabled) {
		t.Fatalf("bulk: %d etag %q %s", code, etag, body)
	}
	if code, _, _ := post(t, base, ctx, map[string]string{"If-None-Match": etag}); code != http.StatusNotModified {
		t.Errorf("bulk with the current ETag = %d, want 304", code)
	}
	if _, h, _ := post(t, base, `{"context":{"targetingKey":"t","service":"checkout"}}`, nil); h.Get("ETag") == etag {
		t.Error("another context has the same ETag")
	}
	e.w.set(t, lever.Shed, "search", "30", time.Hour)
	eventually(t, 5*time.Second, "a new ETag after the change", func() bool {
		code, h, _ := post(t, base, ctx, map[string]string{"If-None-Match": etag})
		return code == http.StatusOK && h.Get("ETag") != etag
	})
	for name, c := range map[string]struct {
		path, body string
		status     int
		code       string
	}{
		"not JSON":     {"/" + lever.ShedPercent, "{\x1b[31m", http.StatusBadRequest, "INVALID_CONTEXT"},
		"unknown flag": {"/nope", ctx, http.StatusNotFound, "FLAG_NOT_FOUND"},
		"huge body":    {"/" + lever.ShedPercent, `{"context":{"x":"` + strings.Repeat("a", 100<<10) + `"}}`, http.StatusBadRequest, "INVALID_CONTEXT"},
	} {
		code, _, body := post(t, base+c.path, c.body, nil)
		if code != c.status || !strings.Contains(body, c.code) {
			t.Errorf("%s: %d %s, want %d %s", name, code, body, c.status, c.code)
		}
		if strings.ContainsRune(body, 0x1b) {
			t.Errorf("%s: the answer echoes a raw control character: %q", name, body)
		}
	}
}

// TestEvaluationV1: the v1 service (older providers) over Connect with
// flagd's published client: typed resolves, ResolveAll, type mismatch and
// the event stream's ready then change.
func TestEvaluationV1(t *testing.T) {
	e := startEnv(t, flagd.Options{})
	c := evaluationv1connect.NewServiceClient(http.DefaultClient, "http://"+e.srv.Addr("eval"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, err := c.EventStream(ctx, connect.NewRequest(&v1.EventStreamRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if !stream.Receive() || stream.Msg().GetType() != "provider_ready" {
		t.Fatalf("first event %v, %v", stream.Msg(), stream.Err())
	}
	e.w.set(t, lever.Retries, "checkout", "cap:2", time.Hour)
	if !stream.Receive() || stream.Msg().GetType() != "configuration_change" {
		t.Fatalf("second event %v, %v", stream.Msg(), stream.Err())
	}
	changed := stream.Msg().GetData().AsMap()["flags"].(map[string]any)
	if _, ok := changed[lever.RetriesMaxAttempts]; !ok || len(changed) != 2 {
		t.Errorf("configuration_change names %v, want the two retries flags", changed)
	}
	sctx, _ := structpb.NewStruct(map[string]any{"service": "checkout"})
	n, err := c.ResolveInt(ctx, connect.NewRequest(&v1.ResolveIntRequest{FlagKey: lever.RetriesMaxAttempts, Context: sctx}))
	if err != nil || n.Msg.GetValue() != 2 || n.Msg.GetVariant() != "cap:2" || n.Msg.GetReason() != "TARGETING_MATCH" {
		t.Errorf("ResolveInt = %v, %v", n, err)
	}
	_, err = c.ResolveString(ctx, connect.NewRequest(&v1.ResolveStringRequest{FlagKey: lever.RetriesEnabled, Context: sctx}))
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeInvalidArgument {
		t.Errorf("a bool flag resolved as a string: %v, want invalid_argument", err)
	}
	all, err := c.ResolveAll(ctx, connect.NewRequest(&v1.ResolveAllRequest{Context: sctx}))
	if err != nil || !all.Msg.GetFlags()[lever.RetriesEnabled].GetBoolValue() || all.Msg.GetFlags()[lever.DegradedMode] == nil {
		t.Errorf("ResolveAll = %v, %v", all, err)
	}
}
