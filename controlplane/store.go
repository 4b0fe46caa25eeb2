package controlplane

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/journal"
)

// Store is the control plane of one namespace on one Redis deployment.
// Every write goes through a Lua script that checks the expected version,
// changes the lever, appends the chained journal entry and publishes the
// change, all or nothing.
type Store struct {
	client       redis.UniversalClient
	keys         Keys
	ep           *endpoint
	user         string // ACL WHOAMI at Open
	aclSupported bool
	identity     *Identity // asked once, see Identity

	// signer signs every entry this store writes; nil writes unsigned.
	signer journal.Signer
	// dur is how lever writes are confirmed on replicas (WAIT).
	dur durability
	// written is the local record of the lever writes this store made
	// (journal.AppendWritten); "" keeps none.
	written string

	mu   sync.Mutex
	head string // last journal head seen, a hint that saves a read
}

// SetSigner makes the store sign every journal entry it writes with signer
// (nil: unsigned). Call it before the first write.
func (s *Store) SetSigner(signer journal.Signer) { s.signer = signer }

// SetWritten makes the store record each lever write's entry in the
// local file at path (Store.WrittenPath), for `journal sync` to re-apply
// after a failover lost them.
func (s *Store) SetWritten(path string) { s.written = path }

// seal chains e after prev and signs it with the store's key.
func (s *Store) seal(e journal.Entry, prev string) (journal.Entry, []byte, error) {
	return e.SealWith(prev, s.signer)
}

// Open connects to the control plane described by cfg and asks the server
// who we are (ACL WHOAMI), which also proves it is reachable. getenv reads
// the password variable named by cfg.PasswordEnv. An unreachable server is
// an *UnavailableError (errors.Is ErrUnavailable).
func Open(ctx context.Context, cfg config.Redis, getenv func(string) string) (*Store, error) {
	ep, err := parseEndpoint(cfg, getenv)
	if err != nil {
		return nil, err
	}
	s := &Store{client: redis.NewUniversalClient(ep.opts), keys: NewKeys(cfg.Namespace), ep: ep}
	s.dur.expect = strings.HasSuffix(ep.scheme, "+sentinel")
	wanted := DefaultWaitReplicas
	if cfg.WaitReplicas != nil {
		wanted = *cfg.WaitReplicas
	}
	s.SetWait(wanted, time.Duration(cfg.WaitTimeout))
	if err := s.whoami(ctx); err != nil {
		s.client.Close()
		return nil, err
	}
	return s, nil
}

// NewStore wraps an existing client, e.g. one built by a test or an
// embedded server, and asks it who we are.
func NewStore(ctx context.Context, client redis.UniversalClient, namespace string) (*Store, error) {
	s := &Store{client: client, keys: NewKeys(namespace), ep: &endpoint{display: clientAddr(client)}}
	s.SetWait(DefaultWaitReplicas, DefaultWaitTimeout)
	if err := s.whoami(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func clientAddr(c redis.UniversalClient) string {
	if c, ok := c.(*redis.Client); ok {
		return "redis://" + c.Options().Addr
	}
	return "redis"
}

func (s *Store) whoami(ctx context.Context) error {
	user, err := s.client.Do(ctx, "ACL", "WHOAMI").Text()
	if err == nil {
		s.user, s.aclSupported = user, true
		return nil
	}
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return s.classify("connect", err, false)
	}
	// Old servers and embedded Redis-protocol servers do not know ACL, or
	// the user may not ask: the journal then records the declared actor.
	return s.classify("connect", s.client.Ping(ctx).Err(), false)
}

// Keys is the namespace's key schema.
func (s *Store) Keys() Keys { return s.keys }

// Client is the underlying Redis client, for readers such as the journal.
func (s *Store) Client() redis.UniversalClient { return s.client }

// WhoAmI is the user the server authenticated (ACL WHOAMI); supported is
// false when the server has no ACL support.
func (s *Store) WhoAmI(context.Context) (user string, supported bool) {
	return s.user, s.aclSupported
}

// String is the server URL without its password, and the namespace.
func (s *Store) String() string {
	ns := strings.Trim(strings.TrimPrefix(s.keys.Prefix(), "stormctl:"), "{}:")
	return s.ep.display + " (namespace " + ns + ")"
}

// Close closes the connections.
func (s *Store) Close() error { return s.client.Close() }

// stamp records who the server says we are on an entry.
func (s *Store) stamp(e *journal.Entry) {
	if e.RedisUser != "" || e.RedisUserNote != "" {
		return
	}
	if s.aclSupported {
		e.RedisUser = s.user
	} else {
		e.RedisUserNote = journal.NoACLNote
	}
}
