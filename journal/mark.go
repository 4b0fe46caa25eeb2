package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/stormctl/stormctl/internal/atomicfile"
	"github.com/stormctl/stormctl/internal/yamlfile"
)

// Mark is the furthest position of a journal that a process on this
// machine saw or wrote: the journal then had Count entries ending at Head,
// stored at stream id Pos. Kept beside the machine's other state for the
// control plane, it lets verify and the loss detector notice a journal
// that went back (a failover to a replica that had not caught up, a wipe).
type Mark struct {
	Count int       `json:"count"`
	Head  string    `json:"head"`
	Pos   string    `json:"pos,omitempty"`
	Time  time.Time `json:"time"`
}

// Checkpoint is the mark as an unsigned checkpoint, for Check.
func (m Mark) Checkpoint() Checkpoint {
	return Checkpoint{Version: CheckpointVersion, Head: m.Head, Count: m.Count, Time: m.Time, Actor: "local high-water mark", Unsigned: true}
}

// maxMarkFile bounds the mark file read.
const maxMarkFile = 4 << 10

// ReadMark reads the mark at path; the zero Mark when there is none.
func ReadMark(path string) (Mark, error) {
	lim := yamlfile.DefaultLimits()
	lim.MaxBytes = maxMarkFile
	data, err := yamlfile.ReadFile(path, lim)
	if errors.Is(err, os.ErrNotExist) {
		return Mark{}, nil
	}
	if err != nil {
		return Mark{}, yamlfile.Prefix("journal mark", err)
	}
	var m Mark
	if err := yamlfile.DecodeJSON(path, data, &m, lim); err != nil {
		return Mark{}, yamlfile.Prefix("journal mark", err)
	}
	if m.Count < 0 || (m.Count > 0 && len(m.Head) != 64) {
		return Mark{}, fmt.Errorf("%s:1:1: journal mark: count %d with head %q", path, m.Count, m.Head)
	}
	return m, nil
}

// RaiseMark records m at path if it is further than the mark there (more
// entries), and returns the mark kept. Processes on one machine raise it
// concurrently: a lock keeps the higher one.
func RaiseMark(path string, m Mark) (Mark, error) {
	return updateMark(path, func(old Mark) (Mark, bool) { return m, m.Count > old.Count })
}

// ResetMark records m at path whatever was there: after a loss has been
// journaled the journal's new position is the one to hold it to.
func ResetMark(path string, m Mark) error {
	_, err := updateMark(path, func(Mark) (Mark, bool) { return m, true })
	return err
}

func updateMark(path string, next func(Mark) (Mark, bool)) (Mark, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return Mark{}, fmt.Errorf("journal mark: %w", err)
	}
	lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return Mark{}, fmt.Errorf("journal mark: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return Mark{}, fmt.Errorf("journal mark %s: lock: %w", path, err)
	}
	old, err := ReadMark(path)
	if err != nil {
		// A corrupt mark is replaced rather than blocking every reader.
		old = Mark{}
	}
	m, write := next(old)
	if !write {
		return old, nil
	}
	m.Time = m.Time.UTC()
	b, _ := json.Marshal(m)
	if err := atomicfile.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return Mark{}, fmt.Errorf("journal mark: %w", err)
	}
	return m, nil
}

// AppendWritten records a sealed entry, as stored, in the writer's local
// record at path, so that entries a failover loses can be re-applied
// (`journal sync`).
func AppendWritten(path string, stored []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("journal written record: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("journal written record: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("journal written record %s: lock: %w", path, err)
	}
	if _, err := f.Write(append(stored, '\n')); err != nil {
		return fmt.Errorf("journal written record %s: %w", path, err)
	}
	return nil
}

// ReadWritten reads the writer's local record at path (AppendWritten);
// none when there is no file.
func ReadWritten(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("journal written record: %w", err)
	}
	defer f.Close()
	return readWritten(f, path)
}

func readWritten(f *os.File, path string) ([]Entry, error) {
	var out []Entry
	for e, err := range Entries(ReadLocalRecords(f, path)) {
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
	return out, nil
}

// DropWritten removes the entries whose ids are in drop from the local
// record at path, keeping everything else, including entries appended
// meanwhile. It rewrites the file in place under the lock AppendWritten
// takes, so a writer appending at the same time is never lost to a rename.
func DropWritten(path string, drop map[string]bool) error {
	if len(drop) == 0 {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("journal written record: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("journal written record %s: lock: %w", path, err)
	}
	entries, err := readWritten(f, path)
	if err != nil {
		return err
	}
	var keep bytes.Buffer
	for _, e := range entries {
		if drop[e.ID] {
			continue
		}
		b, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("journal written record %s: %w", path, err)
		}
		keep.Write(append(b, '\n'))
	}
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("journal written record %s: %w", path, err)
	}
	if _, err := f.WriteAt(keep.Bytes(), 0); err != nil {
		return fmt.Errorf("journal written record %s: %w", path, err)
	}
	return f.Sync()
}
