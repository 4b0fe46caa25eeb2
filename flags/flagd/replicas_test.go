package flagd_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	syncv1 "buf.build/gen/go/open-feature/flagd/protocolbuffers/go/flagd/sync/v1"
	"connectrpc.com/connect"
	gofd "github.com/open-feature/go-sdk-contrib/providers/flagd/pkg"

	"github.com/stormctl/stormctl/flags/flagd"
	"github.com/stormctl/stormctl/lever"
)

func fetch(t *testing.T, addr, selector string) (string, error) {
	t.Helper()
	req := connect.NewRequest(&syncv1.FetchAllFlagsRequest{})
	if selector != "" {
		req.Header().Set(flagd.SelectorHeader, selector)
	}
	res, err := syncClient(addr).FetchAllFlags(context.Background(), req)
	if err != nil {
		return "", err
	}
	return res.Msg.GetFlagConfiguration(), nil
}

// TestReplicasServeTheSameBytes: two servers on one Redis send identical
// configurations (same version), so a client may move between replicas.
func TestReplicasServeTheSameBytes(t *testing.T) {
	a := startEnv(t, flagd.Options{})
	b := startEnvOn(t, a.redis, flagd.Options{})
	a.w.set(t, lever.Retries, "checkout->payments", "off", time.Hour)
	eventually(t, 5*time.Second, "both replicas with the lever and equal bytes", func() bool {
		x, err1 := fetch(t, a.srv.Addr("sync"), "")
		y, err2 := fetch(t, b.srv.Addr("sync"), "")
		return err1 == nil && err2 == nil && x == y && strings.Contains(x, `"off":false`)
	})
}

// TestSelectorOverSync: a selector sent as flagd's header narrows what the
// client is sent, the official Go provider with that selector obeys its
// service's levers, and a malformed selector is refused.
func TestSelectorOverSync(t *testing.T) {
	e := startEnv(t, flagd.Options{})
	e.w.set(t, lever.Retries, "checkout->payments", "off", time.Hour)
	e.w.set(t, lever.Shed, "search", "40", time.Hour)
	eventually(t, 5*time.Second, "both levers served", func() bool {
		all, err := fetch(t, e.srv.Addr("sync"), "")
		return err == nil && strings.Contains(all, `"search"`) && strings.Contains(all, `"checkout"`)
	})
	mine, err := fetch(t, e.srv.Addr("sync"), "service=checkout")
	if err != nil || strings.Contains(mine, `"search"`) || !strings.Contains(mine, `"checkout"`) {
		t.Errorf("service=checkout was sent %s (%v)", mine, err)
	}
	_, err = fetch(t, e.srv.Addr("sync"), "team=payments")
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeInvalidArgument {
		t.Errorf("a malformed selector: %v, want invalid_argument", err)
	}
	c := goClient(t, gofd.WithInProcessResolver(), gofd.WithPort(port(t, e.srv.Addr("sync"))), gofd.WithSelector("service=checkout"))
	eventually(t, 5*time.Second, "the selected client obeying checkout's lever", func() bool {
		return !c.Boolean(context.Background(), lever.RetriesEnabled, true, ctxOf("checkout", "payments"))
	})
}
