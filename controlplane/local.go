package controlplane

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"regexp"

	"github.com/stormctl/stormctl/journal"
)

// LocalDir is this machine's state for the control plane s talks to:
// $XDG_STATE_HOME/stormctl/controlplanes/<host>-<hash>, the hash of its URL
// (without password) and namespace. Contexts naming the same control plane
// share it; a Sentinel URL names the deployment, not the current primary,
// so a failover keeps it.
func (s *Store) LocalDir(getenv func(string) string) string {
	return localDir(s.String(), getenv)
}

// MarkPath is the file holding the furthest journal position seen on this
// machine (journal.Mark).
func (s *Store) MarkPath(getenv func(string) string) string {
	return filepath.Join(s.LocalDir(getenv), "journal-mark.json")
}

// WrittenPath is the file recording the entries this machine's writers
// appended (journal.AppendWritten), from which `journal sync` re-applies
// what a failover lost.
func (s *Store) WrittenPath(getenv func(string) string) string {
	return filepath.Join(s.LocalDir(getenv), "journal-written.jsonl")
}

var unsafePath = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

func localDir(identity string, getenv func(string) string) string {
	sum := sha256.Sum256([]byte(identity))
	host := unsafePath.ReplaceAllString(identity, "_")
	if len(host) > 40 {
		host = host[:40]
	}
	return filepath.Join(journal.StateDir(getenv), "controlplanes", host+"-"+hex.EncodeToString(sum[:6]))
}
