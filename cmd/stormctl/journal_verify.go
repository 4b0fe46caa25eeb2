package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/output"
	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/internal/yamlfile"
	"github.com/stormctl/stormctl/journal"
)

type journalVerifyOptions struct {
	src               journalSourceOptions
	allowedSigners    string
	requireSignatures bool
	allowUnsigned     bool
	checkpoints       []string
	noLocalMark       bool
}

func newJournalVerifyCmd(f *Factory) *cobra.Command {
	o := &journalVerifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check the hash chain, signatures and checkpoints; exit 4 naming the first bad entry",
		Long: `Recompute every entry's SHA-256 and check that each links to the one before it
and that the last is the control plane's journal head. An edited entry fails its
hash; a removed, reordered or inserted one breaks a link.

The chain alone catches accidental edits only: whoever can write Redis can append
an entry with a recomputed hash. So:

  --allowed-signers FILE  check each entry's SSH signature (SSHSIG, namespace
                          stormctl-journal) against an allowed_signers file in
                          git's format, and that the key's principal is the
                          entry's actor; a bad or misattributed signature exits 4
                          (an unsigned entry whose actor holds an allowed key
                          exits 4 too, unless --allow-unsigned)
  --require-signatures    also exit 4 on any unsigned entry or checkpoint
  --checkpoint FILE       a checkpoint kept outside Redis ("journal checkpoint",
                          or any export, which ends with one): the entry at its
                          count must have its head hash, which catches entries
                          cut from the end or rewritten before it

Reading the control plane, it also holds the journal to this machine's
high-water mark (the furthest position any stormctl here saw or wrote): a
journal that is empty or shorter than that fails, as after a failover to a
replica that had not caught up, or a wipe.

It prints what was proven, and what was not. On failure it exits 4 and names the
first bad entry. With --file it checks a saved JSON Lines export (unfiltered);
give --head or --checkpoint to also catch entries removed from its end.`,
		Example: `  stormctl journal verify --allowed-signers ~/.config/stormctl/allowed_signers --require-signatures
  stormctl journal verify --checkpoint INC-7-checkpoint.json --allowed-signers allowed_signers
  stormctl journal verify --file INC-7.jsonl --allowed-signers allowed_signers`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return runJournalVerify(cmd.Context(), f, o) },
	}
	o.src.bind(cmd, "verify")
	fl := cmd.Flags()
	fl.StringVar(&o.src.head, "head", "", "the hash the journal must end at (default: the control plane's head; none for --file)")
	fl.StringVar(&o.allowedSigners, "allowed-signers", "", "allowed_signers file (git/ssh-keygen format) to check signatures against (config: journal.allowed-signers)")
	fl.BoolVar(&o.requireSignatures, "require-signatures", false, "fail (exit 4) on any unsigned entry or checkpoint")
	fl.StringArrayVar(&o.checkpoints, "checkpoint", nil, "checkpoint file or export to match (repeatable)")
	fl.BoolVar(&o.allowUnsigned, "allow-unsigned", false, "accept unsigned entries by actors who hold an allowed key")
	fl.BoolVar(&o.noLocalMark, "no-local-mark", false, "do not hold the journal to this machine's high-water mark")
	return cmd
}

func runJournalVerify(ctx context.Context, f *Factory, o *journalVerifyOptions) error {
	format, err := f.Output()
	if err != nil {
		return err
	}
	opts := journal.VerifyOptions{RequireSignatures: o.requireSignatures, AllowUnsigned: o.allowUnsigned}
	if o.allowedSigners == "" {
		cfg, err := f.Config()
		if err != nil {
			return err
		}
		o.allowedSigners = cfg.Journal.AllowedSigners
	}
	if o.requireSignatures && o.allowedSigners == "" {
		// Anyone can sign with a fresh key: requiring signatures proves
		// something only against a list of whose keys count.
		return exit.NewUsage(errRequireNeedsAllowed)
	}
	if opts.AllowedSigners, err = loadAllowedSigners(o.allowedSigners); err != nil {
		return err
	}
	for _, path := range o.checkpoints {
		cp, err := journal.ReadCheckpoint(path)
		if err != nil {
			return exit.NewUsage(err)
		}
		opts.Checkpoints = append(opts.Checkpoints, journal.SourcedCheckpoint{Source: path, Checkpoint: cp})
	}
	if o.src.file == "" && !o.noLocalMark {
		mark, err := localMark(ctx, f)
		if err != nil {
			return err
		}
		if mark != nil {
			opts.Checkpoints = append(opts.Checkpoints, *mark)
		}
	}
	recs, head, done, err := o.src.records(ctx, f)
	if err != nil {
		return err
	}
	defer done()
	opts.Head = head
	var twoPerson *journal.TwoPerson // approvals must be signed by another key than their request
	if opts.AllowedSigners != nil {
		twoPerson = journal.NewTwoPerson()
	}
	lastPos := ""
	opts.OnEntry = func(r journal.EntryResult) {
		lastPos = r.Pos
		if twoPerson != nil {
			twoPerson.Observe(r)
		}
	}
	rep, verr := journal.Check(recs, opts)
	if verr == nil && o.src.file == "" && rep.Entries > 0 {
		// What verified is the furthest this machine has seen.
		if s, err := f.Store(ctx); err == nil {
			_, _ = journal.RaiseMark(s.MarkPath(f.getenv), journal.Mark{Count: rep.Entries, Head: rep.Head, Pos: lastPos, Time: time.Now()})
		}
	}
	var ve *journal.VerifyError
	if verr != nil && !errors.As(verr, &ve) {
		return fmt.Errorf("journal verify after %d entries: %w", rep.Entries, verr)
	}
	if twoPerson != nil && len(twoPerson.Problems) > 0 {
		rep.Problems = append(rep.Problems, twoPerson.Problems...)
		rep.ProblemCount += len(twoPerson.Problems)
		if verr == nil {
			p := twoPerson.Problems[0]
			verr = &journal.VerifyError{Index: p.Index, Pos: p.Pos, ID: p.ID, Reason: p.String()}
		}
	}
	if format != output.Table {
		// One document, failures included: the report and, on failure,
		// the error with its exit code, as every -o json command prints.
		f.printed = true
		doc := struct {
			*journal.Verification
			Error *errorJSON `json:"error,omitempty"`
		}{rep, newErrorJSON(verr)}
		if err := output.Structured(f.IO.Out, format, doc); err != nil {
			return err
		}
		return verr
	}
	w := f.IO.Out
	if verr == nil {
		fmt.Fprintf(w, "journal verified: %d entries\n", rep.Entries)
	} else {
		fmt.Fprintf(w, "journal verification FAILED after %d entries\n", rep.Entries)
	}
	for _, s := range rep.Proven {
		fmt.Fprintf(w, "  %s\n", s)
	}
	printProblems(w, rep)
	return verr
}

// printProblems lists the entries whose signatures prove nothing.
func printProblems(w io.Writer, rep *journal.Verification) {
	if rep.ProblemCount == 0 {
		return
	}
	fmt.Fprintf(w, "entries whose signature proves nothing (%d):\n", rep.ProblemCount)
	for _, p := range rep.Problems {
		fmt.Fprintf(w, "  entry %d %s (%s): %s\n", p.Index, sanitize.Line(p.ID), sanitize.Line(p.Pos), sanitize.Line(p.String()))
	}
	if more := rep.ProblemCount - len(rep.Problems); more > 0 {
		fmt.Fprintf(w, "  … and %d more\n", more)
	}
}

// localMark is this machine's high-water mark of the control plane's
// journal as a checkpoint; nil when nothing was recorded yet.
func localMark(ctx context.Context, f *Factory) (*journal.SourcedCheckpoint, error) {
	s, err := f.Store(ctx)
	if err != nil {
		return nil, err
	}
	path := s.MarkPath(f.getenv)
	m, err := journal.ReadMark(path)
	if err != nil || m.Count == 0 {
		return nil, err
	}
	return &journal.SourcedCheckpoint{Source: "local high-water mark " + path, Local: true, Checkpoint: m.Checkpoint()}, nil
}

// errRequireNeedsAllowed refuses --require-signatures alone: anyone can
// sign with a fresh key.
var errRequireNeedsAllowed = errors.New("--require-signatures needs --allowed-signers (or journal.allowed-signers in the context): without it any key's signature would pass")

// loadAllowedSigners reads an allowed_signers file; nil for no path. A
// file that cannot be read or parsed is a usage error (exit 2).
func loadAllowedSigners(path string) (*journal.AllowedSigners, error) {
	if path == "" {
		return nil, nil
	}
	data, err := yamlfile.ReadFile(path, yamlfile.DefaultLimits())
	if err != nil {
		return nil, exit.NewUsage(err)
	}
	a, err := journal.ParseAllowedSigners(bytes.NewReader(data), path)
	if err != nil {
		return nil, exit.NewUsage(err)
	}
	return a, nil
}
