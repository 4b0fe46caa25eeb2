package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/journal"
)

// journalSyncResult is `journal sync -o json`: the pending entries appended
// and what became of each lever write a failover lost.
type journalSyncResult struct {
	journal.SyncResult
	Lost []actions.Restore `json:"lost"`
}

func newJournalSyncCmd(f *Factory) *cobra.Command {
	var path string
	var force bool
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Append the entries recorded while Redis was unreachable; re-apply lever writes a failover lost",
		Long: `Append to the shared journal the entries recorded in the local pending file while
Redis was unreachable, in order, keeping their ids and times. Each lands exactly
once: a sync that is interrupted can be run again.

Then re-apply the lever writes this machine made (its local written record) that
the journal no longer holds, as after a failover to a replica that had not
caught up (status, /readyz and the dashboard report it as "journal went back").
Each goes through every guard a person's apply, release or extend does, as the
actor running sync (--actor): policy, evidence, blast radius, approval, conflict
and rate limit. Its entries name the lost entry and who wrote it. An apply is
re-applied until its original expiry; a lever that has expired since is not, and
a note says which. A refusal is journaled, changes nothing, and is tried again
by the next sync (after the rate window, or with --force for missing evidence);
a kind that needs approval is requested again.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if path == "" {
				path = f.PendingPath()
			}
			s, err := f.Store(ctx)
			if err != nil {
				return err
			}
			res := journalSyncResult{Lost: []actions.Restore{}}
			if res.SyncResult, err = journal.Sync(ctx, s, path); err != nil {
				return err
			}
			written := s.WrittenPath(f.getenv)
			lw, err := s.LostWrites(ctx, written)
			if err != nil {
				return err
			}
			var restoreErr error
			if len(lw.Lost) == 0 {
				restoreErr = journal.DropWritten(written, lw.Done)
			} else {
				// Only a loss needs someone to act: the re-applies are theirs.
				svc, err := f.Actions(ctx)
				if err != nil {
					return err
				}
				cfg, _ := f.Config()
				res.Lost, restoreErr = svc.SyncLost(ctx, written, lw, actions.RestoreOptions{Actor: cfg.Actor, Force: force})
			}
			if err := f.Print(res, func(bool) error { return printJournalSync(f, res, path) }); err != nil {
				return err
			}
			return restoreErr
		},
	}
	cmd.Flags().StringVar(&path, "file", "", "pending file (default $STORMCTL_JOURNAL_PENDING or $XDG_STATE_HOME/stormctl/journal-pending.jsonl)")
	cmd.Flags().BoolVar(&force, "force", false, "re-apply lost levers without supporting evidence (journaled as forced)")
	return cmd
}

func printJournalSync(f *Factory, res journalSyncResult, path string) error {
	counts := map[string]int{}
	for _, r := range res.Lost {
		counts[r.Outcome]++
	}
	out := f.IO.Out
	fmt.Fprintf(out, "synced %d entries from %s (%d already appended)\n", res.Appended, sanitize.Line(path), res.Skipped)
	fmt.Fprintf(out, "lost lever writes: %d restored, %d pending approval, %d refused, %d expired since (not re-applied), %d skipped\n",
		counts[actions.RestoreApplied], counts[actions.RestorePending], counts[actions.RestoreRefused], counts[actions.RestoreExpired], counts[actions.RestoreSkipped])
	for _, r := range res.Lost {
		_, err := fmt.Fprintf(out, "  %s %s %s %s (lost entry %s by %s): %s\n", sanitize.Line(r.Outcome), sanitize.Line(r.Kind), sanitize.Line(r.Target),
			sanitize.Line(string(r.Event)), sanitize.Line(r.Lost), sanitize.Line(r.Actor), sanitize.Line(r.Detail))
		if err != nil {
			return err
		}
	}
	return nil
}
