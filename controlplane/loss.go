package controlplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/journal"
)

// LossActor is the actor of controlplane.lost entries: nobody acted; a
// stormctl process noticed the journal had gone back.
const LossActor = "stormctl (loss detector)"

// maxNewer bounds how many entries after the last survivor a loss check
// reads to count them.
const maxNewer = 10000

// Position is where the journal is now: its length, its last entry's hash
// and stream id, read in one transaction.
func (s *Store) Position(ctx context.Context) (journal.Mark, error) {
	var xlen *redis.IntCmd
	var last *redis.XMessageSliceCmd
	_, err := s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		xlen = p.XLen(ctx, s.keys.Journal())
		last = p.XRevRangeN(ctx, s.keys.Journal(), "+", "-", 1)
		return nil
	})
	if err != nil {
		return journal.Mark{}, s.classify("journal position", err, false)
	}
	m := journal.Mark{Count: int(xlen.Val()), Time: time.Now().UTC()}
	if msgs := last.Val(); len(msgs) == 1 {
		m.Pos = msgs[0].ID
		m.Head = entryHash(msgs[0])
	}
	return m, nil
}

// entryHash is the hash of a stream entry, "" when it does not decode.
func entryHash(m redis.XMessage) string {
	data, _ := m.Values["entry"].(string)
	e, err := journal.Parse([]byte(data))
	if err != nil {
		return ""
	}
	return e.Hash
}

// Loss is a journal that went back: entries this machine saw or wrote are
// gone, as after a failover to a replica that had not received them.
type Loss struct {
	Detected time.Time    `json:"detected"`
	Had      journal.Mark `json:"had"` // the furthest position seen before
	Now      journal.Mark `json:"now"` // where the journal was found
	// Missing counts the entries gone: those after stream id After (the
	// last one that survived; "" when none did) up to Had.Pos.
	Missing int    `json:"missing"`
	After   string `json:"after"`
	// Entry is the id of the controlplane.lost entry that records it.
	Entry string `json:"entry,omitempty"`
}

// String says it for a banner, status and /readyz.
func (l *Loss) String() string {
	after := "the start"
	if l.After != "" {
		after = "stream id " + l.After
	}
	return fmt.Sprintf("journal went back: %d entries after %s up to %s (head %.12s, seen %s) are missing; run `stormctl journal sync` to re-apply what this machine wrote",
		l.Missing, after, l.Had.Pos, l.Had.Head, l.Had.Time.UTC().Format(time.RFC3339))
}

// LossDetector remembers the furthest journal position seen, here and in
// the machine's mark file, and notices when the journal goes back. One
// detector per process; Check is safe for concurrent use.
type LossDetector struct {
	s    *Store
	path string // mark file, "" for memory only

	mu   sync.Mutex
	mark journal.Mark
	loss *Loss
}

// NewLossDetector watches s's journal, holding it to the mark file at path
// (Store.MarkPath; "" keeps the mark in memory only).
func NewLossDetector(s *Store, path string) *LossDetector { return &LossDetector{s: s, path: path} }

// NewClientLossDetector watches the journal through a client built by
// Dial (display is the URL it returned), for long-running readers that
// start while Redis is down; its mark file is the one Store.MarkPath names
// for the same control plane.
func NewClientLossDetector(client redis.UniversalClient, namespace, display string, getenv func(string) string) *LossDetector {
	s := &Store{client: client, keys: NewKeys(namespace), ep: &endpoint{display: display}}
	return NewLossDetector(s, s.MarkPath(getenv))
}

// Report is the loss in words, "" when none: flagd's and the actuator's
// /readyz detail.
func (d *LossDetector) Report() string {
	if l := d.Loss(); l != nil {
		return l.String()
	}
	return ""
}

// CheckLoss is Check said for a banner: the loss's text, "" when the
// journal is whole.
func (d *LossDetector) CheckLoss(ctx context.Context) (string, error) {
	l, err := d.Check(ctx)
	if l == nil {
		return "", err
	}
	return l.String(), err
}

// Loss is the last loss detected, nil when none.
func (d *LossDetector) Loss() *Loss {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.loss
}

// Check reads the journal's position and compares it with the furthest
// seen. When the journal went back it journals a controlplane.lost entry
// naming the missing range (once per lost head, whoever notices first),
// holds the mark to the new position and returns the loss; it keeps
// returning it until Acknowledge.
func (d *LossDetector) Check(ctx context.Context) (*Loss, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	pos, err := d.s.Position(ctx)
	if err != nil {
		return d.loss, err
	}
	mark := d.mark
	if d.path != "" {
		if m, err := journal.ReadMark(d.path); err == nil && m.Count > mark.Count {
			mark = m
		}
	}
	if mark.Count == 0 {
		return d.loss, d.raise(pos)
	}
	present, err := d.present(ctx, mark, pos)
	if err != nil {
		return d.loss, err
	}
	if present {
		return d.loss, d.raise(pos)
	}
	loss, err := d.measure(ctx, mark, pos)
	if err != nil {
		return d.loss, err
	}
	e, _, err := d.s.AppendOnce(ctx, journal.Entry{ID: lossID(mark), Event: journal.ControlPlaneLost, Actor: LossActor,
		Reason: "the journal went back (failover to a replica that had not caught up, or a wipe)", Outcome: loss.String()})
	var journalErr error
	if err != nil {
		// A reader whose Redis user may not journal (flagd's role, an
		// actuator bound to its own actor) still reports the loss; the
		// next writer's detector journals it.
		journalErr = fmt.Errorf("journal the loss: %w", err)
	} else {
		loss.Entry = e.ID
	}
	d.loss = loss
	if now, err := d.s.Position(ctx); err == nil {
		pos = now
	}
	d.mark = pos
	if d.path != "" {
		if err := journal.ResetMark(d.path, pos); err != nil {
			return d.loss, err
		}
	}
	return d.loss, journalErr
}

// Acknowledge forgets the reported loss (after `journal sync`).
func (d *LossDetector) Acknowledge() {
	d.mu.Lock()
	d.loss = nil
	d.mu.Unlock()
}

func (d *LossDetector) raise(pos journal.Mark) error {
	if pos.Count > d.mark.Count {
		d.mark = pos
	}
	if d.path == "" || pos.Count == 0 {
		return nil
	}
	_, err := journal.RaiseMark(d.path, pos)
	return err
}

// present reports whether the entry at the mark is still in the journal.
func (d *LossDetector) present(ctx context.Context, mark, pos journal.Mark) (bool, error) {
	if mark.Pos == "" {
		return pos.Count >= mark.Count, nil
	}
	if pos.Pos == mark.Pos {
		return pos.Head == mark.Head, nil
	}
	msgs, err := d.s.client.XRange(ctx, d.s.keys.Journal(), mark.Pos, mark.Pos).Result()
	if err != nil {
		return false, d.s.classify("journal position", err, false)
	}
	return len(msgs) == 1 && entryHash(msgs[0]) == mark.Head, nil
}

// measure names the missing range: the last entry at or before the mark
// that survived, and how many entries after it are gone.
func (d *LossDetector) measure(ctx context.Context, mark, pos journal.Mark) (*Loss, error) {
	l := &Loss{Detected: time.Now().UTC(), Had: mark, Now: pos}
	key := d.s.keys.Journal()
	survivors := 0
	if mark.Pos != "" {
		prev, err := d.s.client.XRevRangeN(ctx, key, mark.Pos, "-", 1).Result()
		if err != nil {
			return nil, d.s.classify("journal position", err, false)
		}
		from := "-"
		if len(prev) == 1 {
			l.After, from = prev[0].ID, "("+prev[0].ID
		}
		newer, err := d.s.client.XRangeN(ctx, key, from, "+", maxNewer).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, d.s.classify("journal position", err, false)
		}
		survivors = pos.Count - len(newer)
	}
	l.Missing = max(mark.Count-survivors, 1)
	return l, nil
}

// lossID is the controlplane.lost entry's id for a lost head: every
// detector that saw that head journals the same entry, once.
func lossID(mark journal.Mark) string {
	if len(mark.Head) >= 20 {
		return "LOST-" + mark.Head[:20]
	}
	return "LOST-" + mark.Pos
}

// LossCheckEvery is how often a long-running reader (flagd serve, the
// Kubernetes actuator) checks that the journal has not gone back: a loss
// is reported within seconds.
const LossCheckEvery = 2 * time.Second

// Watch checks every LossCheckEvery until ctx ends, logging each loss
// once: how a long-running reader remembers the furthest position it saw.
func (d *LossDetector) Watch(ctx context.Context, log *slog.Logger) {
	var logged *Loss
	d.Run(ctx, LossCheckEvery, func(l *Loss, _ error) {
		if l != nil && l != logged && log != nil {
			log.Error("control plane journal went back", "loss", l.String(), "entry", l.Entry)
		}
		logged = l
	})
}

// Run checks every interval until ctx ends, calling report with each new
// loss (and errors, which do not stop it: Redis may come back).
func (d *LossDetector) Run(ctx context.Context, every time.Duration, report func(*Loss, error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	var last *Loss
	for {
		loss, err := d.Check(ctx)
		if report != nil && (err != nil || loss != last) {
			report(loss, err)
		}
		last = loss
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
