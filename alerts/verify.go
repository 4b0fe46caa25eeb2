package alerts

import (
	"context"
	"fmt"
	"time"

	"github.com/stormctl/stormctl/playbooks"
)

// verify runs the playbook's wait step after an applied action in the
// background: holding keeps the lever until its TTL; not holding extends
// it once by the autopilot's TTL and waits again; still not holding
// releases it, so the lever the autopilot chose does not outstay its
// evidence. Every outcome is journaled by the runner and the guards.
func (p *Autopilot) verify(ev *Event, run *playbooks.Run, wait *playbooks.Step, d Decision) {
	ctx, cancel := context.WithCancel(context.Background())
	p.mu.Lock()
	p.cancel = append(p.cancel, cancel)
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer cancel()
		ttl := cmpDur(p.TTL, DefaultAutopilotTTL)
		for extended := false; ; extended = true {
			st, _ := run.RunStep(ctx, wait.ID, playbooks.Input{Yes: true})
			if ctx.Err() != nil {
				return
			}
			if st.Status == playbooks.Passed {
				p.Metrics.decision("kept")
				return
			}
			if !extended {
				reason := fmt.Sprintf("autopilot: %s did not hold (%s); extended once", wait.ID, st.Outcome)
				res, err := p.Actions.Extend(ctx, d.ActionID, Actor, reason, ttl)
				if err != nil {
					p.Metrics.decision("error")
					p.Log.Warn("autopilot: extend", "action", d.ActionID, "err", err)
					return
				}
				p.Metrics.decision("extended")
				x := d
				x.Note = reason
				if len(res.Targets) > 0 && res.Targets[0].After != nil {
					x.Until = res.Targets[0].After.ExpiresAt
				}
				_ = p.Notifier.Enqueue(ctx, leverNoticeKey(x, "extended"), leverNotice(ev, x, "extended"))
				continue
			}
			reason := fmt.Sprintf("autopilot: %s still did not hold after one extension (%s); released for a responder to decide", wait.ID, st.Outcome)
			if _, err := p.Actions.Release(ctx, d.ActionID, Actor, reason); err != nil {
				p.Metrics.decision("error")
				p.Log.Warn("autopilot: release", "action", d.ActionID, "err", err)
				return
			}
			p.Metrics.decision("released")
			x := d
			x.Note, x.Until = reason, time.Time{}
			_ = p.Notifier.Enqueue(ctx, leverNoticeKey(x, "released"), leverNotice(ev, x, "released"))
			return
		}
	}()
}
