package controlplane

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/journal"
)

// Journal returns the namespace's journal stream, for range, tail and follow.
func (s *Store) Journal() *journal.Stream { return journal.NewStream(s.client, s.keys.Journal()) }

// JournalHead returns the hash of the last journal entry, "" when the
// journal is empty.
func (s *Store) JournalHead(ctx context.Context) (string, error) {
	head, err := s.client.Get(ctx, s.keys.JournalHead()).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", fmt.Errorf("read journal head: %w", err)
	}
	return head, nil
}

// VerifyJournal checks the whole chain and that it reaches the head. The
// head is read before the entries, so appends made meanwhile extend past it
// rather than failing the check.
func (s *Store) VerifyJournal(ctx context.Context) (int, error) {
	head, err := s.JournalHead(ctx)
	if err != nil {
		return 0, err
	}
	return journal.Verify(s.Journal().Range(ctx, "-", "+"), head)
}
