package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/journal"
)

// journalSyncResult is `journal sync -o json`: the pending entries appended
// and the lost lever writes re-applied.
type journalSyncResult struct {
	journal.SyncResult
	Lost controlplane.Resynced `json:"lost"`
}

func newJournalSyncCmd(f *Factory) *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Append the entries recorded while Redis was unreachable; re-apply lever writes a failover lost",
		Long: `Append to the shared journal the entries recorded in the local pending file while
Redis was unreachable, in order, keeping their ids and times. Each lands exactly
once: a sync that is interrupted can be run again.

Then re-apply the lever writes this machine made (its local written record) that
the journal no longer holds, as after a failover to a replica that had not
caught up (status and the dashboard report it as "journal went back"): an apply
whose lever has not expired and whose target no other action holds now, a
release or extension of an action still in force. Each is journaled as
re-applied; a lever that expired since is not re-applied, and a note says which.`,
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
			var res journalSyncResult
			if res.SyncResult, err = journal.Sync(ctx, s, path); err != nil {
				return err
			}
			if res.Lost, err = s.Reapply(ctx, s.WrittenPath(f.getenv)); err != nil {
				return err
			}
			return f.Print(res, func(bool) error {
				_, err := fmt.Fprintf(f.IO.Out, "synced %d entries from %s (%d already appended)\nlost lever writes: %d re-applied, %d expired since (not re-applied), %d skipped (superseded or in force)\n",
					res.Appended, path, res.Skipped, len(res.Lost.Reapplied), len(res.Lost.Expired), len(res.Lost.Skipped))
				return err
			})
		},
	}
	cmd.Flags().StringVar(&path, "file", "", "pending file (default $STORMCTL_JOURNAL_PENDING or $XDG_STATE_HOME/stormctl/journal-pending.jsonl)")
	return cmd
}
