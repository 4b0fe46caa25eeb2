package resilience

import (
	"context"

	"github.com/open-feature/go-sdk/openfeature"

	"github.com/stormctl/stormctl/flags"
)

// Levers reads the control-plane levers of one service through an
// OpenFeature client, with the evaluation-context attributes service and
// dependency. A nil client, or any evaluation error, reads as no lever.
type Levers struct {
	client  openfeature.IClient
	service string
	svcCtx  openfeature.EvaluationContext
}

// NewLevers returns the levers of service read through client.
func NewLevers(client openfeature.IClient, service string) *Levers {
	return &Levers{client: client, service: service,
		svcCtx: openfeature.NewTargetlessEvaluationContext(map[string]any{flags.AttrService: service})}
}

// LeverState is what the levers say about calls to one dependency.
type LeverState struct {
	RetriesEnabled bool
	// MaxAttempts is the attempt cap in force, never above the caller's default.
	MaxAttempts int
	ForcedOpen  bool
}

// dependencyContext is the evaluation context of calls to dependency; the
// retrier builds it once instead of on every request.
func (l *Levers) dependencyContext(dependency string) openfeature.EvaluationContext {
	return openfeature.NewTargetlessEvaluationContext(map[string]any{flags.AttrService: l.service, flags.AttrDependency: dependency})
}

// Dependency reads the levers for calls to dependency, whose policy allows
// defaultMax attempts.
func (l *Levers) Dependency(ctx context.Context, dependency string, defaultMax int) LeverState {
	return l.read(ctx, l.dependencyContext(dependency), defaultMax)
}

func (l *Levers) read(ctx context.Context, ec openfeature.EvaluationContext, defaultMax int) LeverState {
	s := LeverState{RetriesEnabled: true, MaxAttempts: defaultMax}
	if l == nil || l.client == nil {
		return s
	}
	s.RetriesEnabled = l.client.Boolean(ctx, flags.RetriesEnabled, true, ec)
	s.ForcedOpen = l.client.Boolean(ctx, flags.BreakerForcedOpen, false, ec)
	if !s.RetriesEnabled {
		s.MaxAttempts = 1
		return s
	}
	// A cap below one attempt would send nothing; one attempt is the
	// strictest meaning a lever can have.
	n := l.client.Int(ctx, flags.RetriesMaxAttempts, int64(defaultMax), ec)
	s.MaxAttempts = int(max(min(n, int64(defaultMax)), 1))
	return s
}

// ShedPercent is the share (0–100) of new work the service must reject at
// ingress.
func (l *Levers) ShedPercent(ctx context.Context) int {
	if l == nil || l.client == nil {
		return 0
	}
	return int(max(min(l.client.Int(ctx, flags.ShedPercent, 0, l.svcCtx), 100), 0))
}

// Degraded is the degraded mode the service should run in ("" for normal
// operation, else a mode name such as "on" or "rules-only").
func (l *Levers) Degraded(ctx context.Context) string {
	if l == nil || l.client == nil {
		return ""
	}
	return l.client.String(ctx, flags.DegradedMode, "", l.svcCtx)
}
