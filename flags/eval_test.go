package flags_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/open-feature/go-sdk/openfeature"

	"github.com/stormctl/stormctl/flags"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lever"
)

// details evaluates flag through the SDK client with the Go type of def.
func details(c *openfeature.Client, flag string, def any, ec openfeature.EvaluationContext) (any, openfeature.ResolutionDetail) {
	ctx := context.Background()
	switch d := def.(type) {
	case bool:
		r, _ := c.BooleanValueDetails(ctx, flag, d, ec)
		return r.Value, r.ResolutionDetail
	case int64:
		r, _ := c.IntValueDetails(ctx, flag, d, ec)
		return r.Value, r.ResolutionDetail
	case string:
		r, _ := c.StringValueDetails(ctx, flag, d, ec)
		return r.Value, r.ResolutionDetail
	default:
		r, _ := c.FloatValueDetails(ctx, flag, def.(float64), ec)
		return r.Value, r.ResolutionDetail
	}
}

func TestEvaluateThroughSDK(t *testing.T) {
	_, rc, w := newRedis(t, testenv.RedisOptions{})
	// Written before Init: the first sync reads them.
	held := map[string]lever.Lever{}
	for _, l := range []struct {
		kind          lever.Kind
		target, value string
	}{
		{lever.Retries, "checkout", "cap:2"},
		{lever.Retries, "checkout->payments", "off"},
		{lever.Breaker, "payments", "open"},
		{lever.Breaker, "checkout->ledger", "open"},
		{lever.Autoscaling, "checkout", "frozen"},
		{lever.Shed, "billing", "lots"},
	} {
		held[l.target+"/"+string(l.kind)] = w.set(t, l.kind, l.target, l.value, time.Hour, true)
	}
	p := flags.NewProvider(rc, flags.ResyncInterval(time.Hour))
	c, ev := sdk(t, p)
	if c.State() != openfeature.ReadyState {
		t.Fatalf("state after init = %s", c.State())
	}
	// Written after Init: they arrive by push.
	held["checkout/degraded"] = w.set(t, lever.Degraded, "checkout", "rules-only", time.Hour, true)
	ev.wait(t, openfeature.ProviderConfigChange, 5*time.Second)
	held["checkout/shed"] = w.set(t, lever.Shed, "checkout", "25", time.Hour, true)
	ev.wait(t, openfeature.ProviderConfigChange, 5*time.Second)

	const (
		tm  = openfeature.TargetingMatchReason
		def = openfeature.DefaultReason
		er  = openfeature.ErrorReason
	)
	cases := []struct {
		flag, service, dep string
		def, want          any
		reason             openfeature.Reason
		lever              string // held key of the matched lever
		code               openfeature.ErrorCode
	}{
		{flags.RetriesEnabled, "checkout", "payments", true, false, tm, "checkout->payments/retries", ""},
		{flags.RetriesEnabled, "checkout", "ledger", false, true, tm, "checkout/retries", ""},
		{flags.RetriesEnabled, "billing", "payments", false, true, def, "", ""},
		{flags.RetriesMaxAttempts, "checkout", "payments", int64(5), int64(1), tm, "checkout->payments/retries", ""},
		{flags.RetriesMaxAttempts, "checkout", "ledger", int64(5), int64(2), tm, "checkout/retries", ""},
		{flags.RetriesMaxAttempts, "billing", "", int64(5), int64(5), def, "", ""},
		{flags.BreakerForcedOpen, "checkout", "payments", false, true, tm, "payments/breaker", ""},
		{flags.BreakerForcedOpen, "", "payments", false, true, tm, "payments/breaker", ""},
		{flags.BreakerForcedOpen, "checkout", "ledger", false, true, tm, "checkout->ledger/breaker", ""},
		{flags.BreakerForcedOpen, "billing", "ledger", true, false, def, "", ""},
		{flags.AutoscalingFrozen, "checkout", "", false, true, tm, "checkout/autoscaling", ""},
		{flags.AutoscalingFrozen, "billing", "", true, false, def, "", ""},
		{flags.DegradedMode, "checkout", "payments", "x", "rules-only", tm, "checkout/degraded", ""},
		{flags.DegradedMode, "billing", "", "x", "", def, "", ""},
		{flags.ShedPercent, "checkout", "", int64(3), int64(25), tm, "checkout/shed", ""},
		{flags.ShedPercent, "search", "", int64(3), int64(0), def, "", ""},
		{flags.ShedPercent, "billing", "", int64(7), int64(7), er, "", openfeature.ParseErrorCode},
		{"stormctl.nope", "checkout", "", true, true, er, "", openfeature.FlagNotFoundCode},
		{flags.RetriesEnabled, "checkout", "", int64(4), int64(4), er, "", openfeature.TypeMismatchCode},
		{flags.ShedPercent, "checkout", "", 1.5, 1.5, er, "", openfeature.TypeMismatchCode},
	}
	for _, tc := range cases {
		got, d := details(c, tc.flag, tc.def, evalCtx(tc.service, tc.dep))
		name := tc.flag + " " + tc.service + "->" + tc.dep
		if got != tc.want || d.Reason != tc.reason || d.ErrorCode != tc.code {
			t.Errorf("%s = %v (%s %s %s), want %v (%s %s)", name, got, d.Reason, d.ErrorCode, d.ErrorMessage, tc.want, tc.reason, tc.code)
			continue
		}
		if tc.lever == "" {
			continue
		}
		l := held[tc.lever]
		target, _ := d.FlagMetadata.GetString("target")
		actionID, _ := d.FlagMetadata.GetString("action_id")
		actor, _ := d.FlagMetadata.GetString("actor")
		expires, _ := d.FlagMetadata.GetString("expires_at")
		version, _ := d.FlagMetadata.GetInt("version")
		at, err := time.Parse(time.RFC3339Nano, expires)
		if target != l.Target || actionID != l.ActionID || actor != l.Actor || err != nil || !at.Equal(l.ExpiresAt) ||
			version != l.Version || d.Variant != l.Value {
			t.Errorf("%s: metadata %v variant %q, want lever %+v", name, d.FlagMetadata, d.Variant, l)
		}
	}

	bad := openfeature.NewTargetlessEvaluationContext(map[string]any{flags.AttrService: 42})
	if _, d := details(c, flags.RetriesEnabled, true, bad); d.ErrorCode != openfeature.InvalidContextCode {
		t.Errorf("service=42: %s %s, want INVALID_CONTEXT", d.Reason, d.ErrorCode)
	}
}

func TestInvalidFailSafeIsFatal(t *testing.T) {
	_, rc, _ := newRedis(t, testenv.RedisOptions{})
	for _, opt := range []flags.Option{
		flags.FailSafe(flags.DegradedMode, true),
		flags.FailSafe("stormctl.unknown", "on"),
	} {
		p := flags.NewProvider(rc, opt)
		err := p.Init(openfeature.EvaluationContext{})
		var initErr *openfeature.ProviderInitError
		if !errors.As(err, &initErr) || initErr.ErrorCode != openfeature.ProviderFatalCode {
			t.Errorf("Init = %v, want a fatal ProviderInitError", err)
		}
		p.Shutdown()
	}
}
