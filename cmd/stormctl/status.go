package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/output"
	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
	"github.com/stormctl/stormctl/tui/common"
)

// statusLever is one row of `stormctl status -o json`: the lever as
// stored, and how long it has left and who has seen it.
type statusLever struct {
	lever.
		Lever
	// SecondsLeft is the time left before the lever expires by itself.
	SecondsLeft int64 `json:"seconds_left"`
	// SeenBy counts the live provider instances that applied this version.
	SeenBy int `json:"seen_by"`
}

// statusOutput is the stable shape of `stormctl status -o json`.
type statusOutput struct {
	Server    string        `json:"server"`
	RedisUser string        `json:"redis_user,omitempty"`
	Instances int           `json:"instances"` // live provider instances
	Levers    []statusLever `json:"levers"`
	// Actuators are the reports of running actuators with their problems
	// ("forbidden: patch hpa/checkout in shop").
	Actuators []controlplane.ComponentStatus `json:"actuators,omitempty"`
	// Identity says whether Redis binds the actor; Advisory is set when it
	// does not (one shared user): roles and approvals are advisory.
	Identity controlplane.Identity `json:"identity"`
	Advisory string                `json:"advisory,omitempty"`
	// Replication is the primary's replicas, their lag and the settings
	// that bound what a failover can lose; absent when INFO is refused.
	Replication *controlplane.ReplicationInfo `json:"replication,omitempty"`
	// Loss is the journal going back, found now against this machine's
	// high-water mark, or the last controlplane.lost entry of the journal.
	Loss *statusLoss `json:"loss,omitempty"`
}

// statusLoss is a loss of acknowledged entries, as status reports it.
type statusLoss struct {
	Detected time.Time `json:"detected"`
	Entry    string    `json:"entry"`
	Detail   string    `json:"detail"`
}

func newStatusCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show every active lever: value, holder, reason, time left, instances that see it",
		Long: `Show every active lever with its value, the action and actor holding it, the
reason and incident, the time left before it expires by itself, and how many of
the live provider instances have applied it ("seen by 77/78").

With -o json the shape is {server, redis_user, instances, levers: [{kind,
target, value, action_id, actor, reason, incident, created_at, expires_at,
version, previous (the lever it superseded, if any), seconds_left, seen_by}]}.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return runStatus(cmd.Context(), f, time.Now) },
	}
}

func runStatus(ctx context.Context, f *Factory, now func() time.Time) error {
	s, err := f.Store(ctx)
	if err != nil {
		return err
	}
	levers, err := s.Levers(ctx)
	if err != nil {
		return err
	}
	seen, live, err := s.Acks(ctx)
	if err != nil {
		return err
	}
	user, _ := s.WhoAmI(ctx)
	actuators, err := s.Statuses(ctx, kubeActuatorComponent)
	if err != nil {
		return err
	}
	id, err := s.Identity(ctx)
	if err != nil {
		return err
	}
	out := statusOutput{Server: s.String(), RedisUser: user, Instances: live, Levers: []statusLever{}, Actuators: actuators,
		Identity: id, Advisory: id.Advisory()}
	if out.Advisory != "" {
		fmt.Fprintln(f.IO.ErrOut, "stormctl: note: "+sanitize.Line(out.Advisory))
	}
	if rep, err := s.Replication(ctx); err == nil {
		out.Replication = &rep
	}
	out.Loss = statusLossOf(ctx, s, f.getenv)
	t := now()
	for _, l := range levers {
		out.Levers = append(out.Levers, statusLever{Lever: l, SecondsLeft: int64(common.CeilSecond(l.ExpiresAt.Sub(t)) / time.Second),
			SeenBy: seen[lever.Member(l.Kind, l.Target)]})
	}
	return f.Print(out, func(tty bool) error {
		printActuators(f, out.Actuators)
		if out.Replication != nil {
			fmt.Fprintln(f.IO.ErrOut, out.Replication.String())
		}
		if out.Loss != nil {
			fmt.Fprintf(f.IO.ErrOut, "LOST at %s (entry %s): %s\n", out.Loss.Detected.Format(time.RFC3339), sanitize.Line(out.Loss.Entry), sanitize.Line(out.Loss.Detail))
		}
		if len(out.Levers) == 0 {
			fmt.Fprintf(f.IO.ErrOut, "no levers active on %s: normal operation\n", out.Server)
			return nil
		}
		tp := output.NewTable(f.IO.Out, tty, "kind", "target", "value", "holder", "reason", "incident", "left", "seen by")
		for _, l := range out.Levers {
			tp.Row(string(l.Kind), l.Target, l.Value, l.Actor+" ("+l.ActionID+")", l.Reason, l.Incident,
				left(time.Duration(l.SecondsLeft)*time.Second), fmt.Sprintf("%d/%d", l.SeenBy, out.Instances)+actuatorHolds(out.Actuators, lever.Member(l.Kind, l.Target)))
		}
		return tp.Flush()
	})
}

// statusLossOf checks the journal against this machine's high-water mark
// (journaling a loss found), else reports the journal's last
// controlplane.lost entry among its recent ones.
func statusLossOf(ctx context.Context, s *controlplane.Store, getenv func(string) string) *statusLoss {
	if l, err := controlplane.NewLossDetector(s, s.MarkPath(getenv)).Check(ctx); err == nil && l != nil {
		return &statusLoss{Detected: l.Detected, Entry: l.Entry, Detail: l.String()}
	}
	recs, err := s.Journal().Tail(ctx, 500)
	if err != nil {
		return nil
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if e, err := journal.Parse(recs[i].Data); err == nil && e.Event == journal.ControlPlaneLost {
			return &statusLoss{Detected: e.Time, Entry: e.ID, Detail: e.Outcome}
		}
	}
	return nil
}

// left is a duration for humans, as the dashboard shows it.
func left(d time.Duration) string { return common.Left(d) }

// kubeActuatorComponent is the Kubernetes actuator's status component
// (actuators/kubernetes.Component), spelled here so status does not link
// the Kubernetes client for one constant.
const kubeActuatorComponent = "actuator:kubernetes"

// actuatorHolds is what the actuators hold changed for a lever, by kind:
// " (2 httproute, 1 service)", or "" when none does.
func actuatorHolds(sts []controlplane.ComponentStatus, member string) string {
	counts := map[string]int{}
	for _, st := range sts {
		for kind, n := range st.Holds[member] {
			counts[kind] += n
		}
	}
	var parts []string
	for _, kind := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%d %s", counts[kind], kind))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// printActuators says on stderr what running actuators could not do:
// "actuator: forbidden: patch hpa/checkout in shop". The problems come from
// Redis and the cluster, so they are sanitised.
func printActuators(f *Factory, sts []controlplane.ComponentStatus) {
	for _, st := range sts {
		for _, p := range st.Problems {
			fmt.Fprintf(f.IO.ErrOut, "actuator: %s\n", sanitize.Line(p))
		}
	}
}
