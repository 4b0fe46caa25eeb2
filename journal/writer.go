package journal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// EnvPending names the pending file instead of the default path.
const EnvPending = "STORMCTL_JOURNAL_PENDING"

// OfflineNote is the RedisUserNote of entries recorded in the pending file:
// no server authenticated whoever made them.
const OfflineNote = "recorded offline while Redis was unreachable; declared actor only"

// Remote chains entries in the shared journal; *controlplane.Store is one.
type Remote interface {
	Append(ctx context.Context, e Entry) (Entry, error)
	// AppendOnce appends e unless an entry with e.ID was appended by
	// AppendOnce before, and reports whether it appended.
	AppendOnce(ctx context.Context, e Entry) (Entry, bool, error)
}

// DefaultPendingPath is $STORMCTL_JOURNAL_PENDING, else
// $XDG_STATE_HOME/stormctl/journal-pending.jsonl, else
// ~/.local/state/stormctl/journal-pending.jsonl.
func DefaultPendingPath(getenv func(string) string) string {
	if p := getenv(EnvPending); p != "" {
		return p
	}
	return filepath.Join(StateDir(getenv), "journal-pending.jsonl")
}

// StateDir is stormctl's local state: $XDG_STATE_HOME/stormctl, else
// ~/.local/state/stormctl.
func StateDir(getenv func(string) string) string {
	dir := getenv("XDG_STATE_HOME")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "stormctl")
}

// Writer appends entries to the shared journal, or to the local pending
// file when the control plane is unreachable, so no attempt goes unrecorded.
type Writer struct {
	remote  Remote
	pending string
}

// NewWriter returns a writer over remote (nil, untyped, when no store could
// be opened) with the pending file at path.
func NewWriter(remote Remote, path string) *Writer { return &Writer{remote: remote, pending: path} }

// Append chains e in the shared journal and returns it sealed. When the
// control plane is unavailable (errors.Is ErrUnavailable) or there is none,
// e is written to the pending file instead, with local true and no error.
func (w *Writer) Append(ctx context.Context, e Entry) (sealed Entry, local bool, err error) {
	if w.remote != nil {
		sealed, err = w.remote.Append(ctx, e)
		if err == nil || !errors.Is(err, ErrUnavailable) {
			return sealed, false, err
		}
	}
	recorded, perr := AppendPending(w.pending, e)
	if perr != nil {
		return Entry{}, false, errors.Join(err, perr)
	}
	return recorded, true, nil
}

// AppendPending records e in the pending file at path, marked Offline with
// its ID and time fixed now, to be chained later by Sync. It returns the
// entry as recorded.
func AppendPending(path string, e Entry) (Entry, error) {
	if e.ID == "" {
		e.ID = NewID()
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	e.Time, e.Offline = e.Time.UTC(), true
	e.PrevHash, e.Hash = "", ""
	if e.RedisUser == "" {
		e.RedisUserNote = OfflineNote
	}
	line, err := e.Canonical()
	if err != nil {
		return e, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return e, fmt.Errorf("journal pending file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return e, fmt.Errorf("journal pending file: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return e, fmt.Errorf("journal pending file %s: lock: %w", path, err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		return e, fmt.Errorf("journal pending file %s: %w", path, err)
	}
	return e, f.Sync()
}

// SyncResult counts what Sync did.
type SyncResult struct {
	Appended int `json:"appended"`
	Skipped  int `json:"skipped"` // already appended by an interrupted sync
}

// Sync appends every entry of the pending file at path to remote, in file
// order, chained now but keeping their ids and times, then empties the file.
// Each entry lands exactly once: remote skips ids it has synced before, so
// a sync interrupted at any point can simply run again.
func Sync(ctx context.Context, remote Remote, path string) (SyncResult, error) {
	var res SyncResult
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("journal pending file: %w", err)
	}
	defer f.Close()
	// Hold the lock throughout, so no entry is written between the last
	// append and the truncation (it would be lost).
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return res, fmt.Errorf("journal pending file %s: lock: %w", path, err)
	}
	entries, err := LocalEntries(f, path)
	if err != nil {
		return res, err
	}
	for e, err := range entries {
		if err != nil {
			return res, err
		}
		_, appended, err := remote.AppendOnce(ctx, e)
		if err != nil {
			return res, fmt.Errorf("journal sync stopped at entry %s (run it again: entries already appended are skipped): %w", e.ID, err)
		}
		if appended {
			res.Appended++
		} else {
			res.Skipped++
		}
	}
	if err := f.Truncate(0); err != nil {
		return res, fmt.Errorf("journal pending file %s: %w", path, err)
	}
	return res, f.Sync()
}

// Pending lists the entries waiting in the pending file at path.
func Pending(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Entry
	for e, err := range Entries(ReadLocalRecords(f, path)) {
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
	return out, nil
}

// LocalEntries checks every record of f, a file this machine wrote (the
// pending file, the written record, named path), then rewinds it and
// returns its entries. A file past its limits or with a record that does
// not decode is refused before any of it is acted on, and only one entry
// is held at a time.
func LocalEntries(f io.ReadSeeker, path string) (iter.Seq2[Entry, error], error) {
	for _, err := range Entries(ReadLocalRecords(f, path)) {
		if err != nil {
			return nil, err
		}
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return Entries(ReadLocalRecords(f, path)), nil
}
