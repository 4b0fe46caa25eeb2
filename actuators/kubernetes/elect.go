package kubernetes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// elector campaigns for the Lease and runs the actuator while this replica
// holds it, then campaigns again — for as long as the process runs.
//
// controller-runtime's manager has leader election built in, but it ends
// the whole process on a lost lease ("leader election lost"), and a stopped
// manager cannot be started again. An API server outage longer than the
// renew deadline would then kill every replica at once, each coming back
// with a cold cache. So the manager runs without leader election (its cache
// and watches serve every replica, leader or not) and this loop runs
// client-go's leaderelection itself: a lost lease ends one term of the
// actuator, never the process.
type elector struct {
	a      *Actuator
	lock   *trackedLock
	config leaderelection.LeaderElectionConfig
	log    *slog.Logger
	// termMu serialises terms: a term's actuator has stopped before the
	// next one starts (client-go starts OnStartedLeading in a goroutine).
	termMu sync.Mutex
}

func newElector(a *Actuator, cfg *rest.Config, namespace, instance string, lease, renew, retry time.Duration, log *slog.Logger) (*elector, error) {
	// A hung request must not outlast the renew deadline (client-go's
	// advice: half of it, at least a second).
	c := rest.CopyConfig(cfg)
	c.Timeout = max(time.Second, renew/2)
	coord, err := coordinationv1.NewForConfig(rest.AddUserAgent(c, "stormctl-leader-election"))
	if err != nil {
		return nil, err
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	// The instance names the replica to people; the suffix keeps two
	// processes given the same instance from both believing they lead.
	id := instance + "_" + hex.EncodeToString(b)
	lock := &trackedLock{Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: namespace, Name: LeaseName},
		Client:     coord,
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}}
	e := &elector{a: a, lock: lock, log: log}
	e.config = leaderelection.LeaderElectionConfig{
		Lock: lock, Name: LeaseName, ReleaseOnCancel: true,
		LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: e.term,
			OnStoppedLeading: func() {},
		},
	}
	if _, err := leaderelection.NewLeaderElector(e.config); err != nil {
		return nil, fmt.Errorf("leader election: %w", err)
	}
	return e, nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: the elector
// is what elects.
func (e *elector) NeedLeaderElection() bool { return false }

// Start implements manager.Runnable.
func (e *elector) Start(ctx context.Context) error {
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(e.config)
		if err != nil {
			return err
		}
		le.Run(ctx) // returns once the lease is lost or ctx ends
		if ctx.Err() == nil {
			e.log.Warn("lost the leader lease; campaigning again", "lease", LeaseName)
			e.a.opts.Metrics.leaseLost.Inc()
		}
	}
	e.termMu.Lock() // the last term has ended
	defer e.termMu.Unlock()
	return nil
}

func (e *elector) term(ctx context.Context) {
	e.termMu.Lock()
	defer e.termMu.Unlock()
	if ctx.Err() != nil {
		return
	}
	e.log.Info("leading", "lease", LeaseName, "identity", e.lock.Identity())
	_ = e.a.Start(ctx)
}

// trackedLock remembers how the last request about the Lease went: every
// replica makes one each retry period, so it says whether the API server
// answers without a request of its own.
type trackedLock struct {
	resourcelock.Interface
	mu     sync.Mutex
	lastOK time.Time
	err    error
	errAt  time.Time
}

func (l *trackedLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	r, b, err := l.Interface.Get(ctx)
	l.note(err)
	return r, b, err
}

func (l *trackedLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, r)
	l.note(err)
	return err
}

func (l *trackedLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, r)
	l.note(err)
	return err
}

// note records an answer; "not found" and "conflict" are answers too.
func (l *trackedLock) note(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		l.lastOK, l.err = time.Now(), nil
		return
	}
	if l.err == nil {
		l.errAt = time.Now()
	}
	l.err = err
}

// problem says whether the API server failed the last request about the
// Lease, and since when.
func (l *trackedLock) problem() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.err != nil:
		return fmt.Errorf("API server not answering for %s: %w", time.Since(l.errAt).Round(time.Second), l.err)
	case l.lastOK.IsZero():
		return fmt.Errorf("API server not reached yet")
	}
	return nil
}
