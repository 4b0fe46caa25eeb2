package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/atomicfile"
	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/journal"
)

type journalCheckpointOptions struct {
	src journalSourceOptions
	out string
}

func newJournalCheckpointCmd(f *Factory) *cobra.Command {
	o := &journalCheckpointOptions{}
	cmd := &cobra.Command{
		Use:   "checkpoint",
		Short: "Write a checkpoint (signed when a key is configured) of the journal (head hash, count, time) to keep outside Redis",
		Long: `Verify the hash chain, then write a checkpoint of it: the head hash, how many
entries it has and the time, signed with the journal signing key (--signing-key,
journal.signing-key or ssh-agent) as the current actor. Without a key the
checkpoint is written unsigned and marked so ("unsigned": true): it still
catches a journal cut or wiped by accident or by a failover, but only as far as
the place it is kept can be trusted. Keep it somewhere Redis
writers cannot reach (a ticket, a wiki, git): "journal verify --checkpoint FILE"
then detects entries cut from the end of the journal, or any rewrite before it.`,
		Example: `  stormctl journal checkpoint --out INC-7-checkpoint.json
  stormctl journal checkpoint --file INC-7.jsonl`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return runJournalCheckpoint(cmd.Context(), f, o) },
	}
	o.src.bind(cmd, "checkpoint")
	cmd.Flags().StringVar(&o.out, "out", "", "write the checkpoint to this file instead of stdout")
	return cmd
}

func runJournalCheckpoint(ctx context.Context, f *Factory, o *journalCheckpointOptions) error {
	signer, err := f.Signer()
	if err != nil {
		return err
	}
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	recs, head, done, err := o.src.records(ctx, f)
	if err != nil {
		return err
	}
	defer done()
	// Checkpoint only a chain that verifies: signing a broken one would
	// vouch for the break.
	rep, err := journal.Check(recs, journal.VerifyOptions{Head: head})
	if err != nil {
		return fmt.Errorf("journal checkpoint: nothing written: %w", err)
	}
	cp, err := journal.NewCheckpoint(rep.Head, rep.Entries, time.Now(), cfg.Actor, signer)
	if err != nil {
		return err
	}
	line := append(cp.JSON(), '\n')
	where := "stdout"
	if o.out == "" {
		if _, err = f.IO.Out.Write(line); err != nil {
			return err
		}
	} else {
		if err := atomicfile.WriteFile(o.out, line, 0o600); err != nil {
			return fmt.Errorf("journal checkpoint: %w", err)
		}
		where = o.out
	}
	if signer == nil {
		fmt.Fprintf(f.IO.ErrOut, "unsigned checkpoint of %d entries (head %.12s) by %q written to %s: no signing key, so it proves the count only as far as the file itself is trusted (give --signing-key to sign)\n",
			cp.Count, cp.Head, sanitize.Line(cfg.Actor), where)
		return nil
	}
	if o.out == "" {
		return nil
	}
	fmt.Fprintf(f.IO.ErrOut, "checkpoint of %d entries (head %.12s) signed by %q with %s written to %s\n",
		cp.Count, cp.Head, cfg.Actor, journal.KeyFingerprint(signer.PublicKey()), o.out)
	return nil
}
