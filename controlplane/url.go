package controlplane

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/exit"
)

// Timeouts are short: during a storm Redis may be the thing struggling, and
// a responder needs a clear failure in seconds, not a hang.
const (
	dialTimeout = 2 * time.Second
	ioTimeout   = 3 * time.Second
)

// endpoint is a parsed control-plane address.
type endpoint struct {
	opts     *redis.UniversalOptions
	scheme   string // redis, rediss, redis+sentinel, rediss+sentinel
	display  string // URL without the password
	password string // kept only to redact it from errors
}

// parseEndpoint turns the configured URL and credentials into client
// options. Supported forms:
//
//	redis://[user[:password]@]host[:port][/db]            single node
//	rediss://…                                             the same over TLS
//	redis://…?addr=host2:port&addr=host3:port              Redis Cluster (seed nodes)
//	redis://host:port?cluster=true                         Redis Cluster from one seed
//	redis+sentinel://[user[:password]@]s1:26379[,s2:26379]/master   Sentinel
//
// The password comes from the URL, else the environment variable named by
// PasswordEnv, else the file PasswordFile. No error names the password.
func parseEndpoint(cfg config.Redis, getenv func(string) string) (*endpoint, error) {
	if cfg.URL == "" {
		return nil, exit.NewUsage(errors.New("no control-plane Redis configured: set --redis-url, STORMCTL_REDIS_URL or redis.url in the context"))
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, exit.NewUsage(fmt.Errorf("redis URL %s: invalid", redactRaw(cfg.URL)))
	}
	ep := &endpoint{scheme: u.Scheme}
	if u.User != nil {
		ep.password, _ = u.User.Password()
	}
	if ep.password == "" {
		if ep.password, err = secret(cfg, getenv); err != nil {
			return nil, exit.NewUsage(err)
		}
	}
	o := &redis.UniversalOptions{
		DialTimeout: dialTimeout, ReadTimeout: ioTimeout, WriteTimeout: ioTimeout,
		// A write whose reply is lost must not be sent again behind the
		// caller's back: the caller decides, with its idempotency key.
		MaxRetries: -1,
		PoolSize:   8,
	}
	q := u.Query()
	switch u.Scheme {
	case "redis", "rediss":
		o.Addrs = append([]string{hostPort(u.Host, "6379")}, q["addr"]...)
		o.IsClusterMode = q.Get("cluster") == "true"
		q.Del("addr")
		q.Del("cluster")
	case "redis+sentinel", "rediss+sentinel":
		for h := range strings.SplitSeq(u.Host, ",") {
			o.Addrs = append(o.Addrs, hostPort(h, "26379"))
		}
		o.MasterName = strings.Trim(u.Path, "/")
		u.Path = ""
		if o.MasterName == "" {
			return nil, exit.NewUsage(fmt.Errorf("redis URL %s: a sentinel URL names the master as its path, e.g. redis+sentinel://host:26379/mymaster", redactURL(u)))
		}
	default:
		return nil, exit.NewUsage(fmt.Errorf("redis URL %s: scheme must be redis, rediss, redis+sentinel or rediss+sentinel", redactURL(u)))
	}
	if err := checkDatabase(u); err != nil {
		return nil, exit.NewUsage(err)
	}
	if len(q) > 0 {
		return nil, exit.NewUsage(fmt.Errorf("redis URL %s: unknown parameters (only addr= and cluster=true are understood)", redactURL(u)))
	}
	if u.User != nil {
		o.Username = u.User.Username()
	}
	o.Password = ep.password
	if o.MasterName != "" {
		o.SentinelUsername, o.SentinelPassword = o.Username, o.Password
	}
	tlsOn := strings.HasPrefix(u.Scheme, "rediss")
	if !tlsOn && cfg.TLS != (config.TLS{}) {
		return nil, exit.NewUsage(fmt.Errorf("redis URL %s: TLS files are configured but the scheme is not rediss", redactURL(u)))
	}
	if tlsOn {
		if o.TLSConfig, err = tlsConfig(cfg.TLS, u.Hostname()); err != nil {
			return nil, exit.NewUsage(err)
		}
	}
	ep.opts = o
	ep.display = redactURL(u)
	return ep, nil
}

// checkDatabase accepts the standard path /0 (or none) and refuses any other
// database: every reader of the levers — services' flag providers, flagd,
// the dashboard — looks in database 0, and Redis Cluster has no other, so a
// lever written elsewhere would be obeyed by nobody.
func checkDatabase(u *url.URL) error {
	p := strings.TrimPrefix(u.Path, "/")
	if p == "" || p == "0" {
		return nil
	}
	if n, err := strconv.Atoi(p); err == nil && n > 0 {
		return fmt.Errorf("redis URL %s: database %d refused: stormctl keeps levers in database 0, where every service's flag provider and flagd read them (and Redis Cluster has only database 0); use /0 or no path", redactURL(u), n)
	}
	return fmt.Errorf("redis URL %s: path %q is not a database number; stormctl uses database 0: use /0 or no path", redactURL(u), u.Path)
}

func hostPort(h, port string) string {
	if h == "" {
		return "localhost:" + port
	}
	if strings.LastIndex(h, ":") > strings.LastIndex(h, "]") {
		return h
	}
	return h + ":" + port
}

func secret(cfg config.Redis, getenv func(string) string) (string, error) {
	if cfg.PasswordEnv != "" {
		if v := getenv(cfg.PasswordEnv); v != "" {
			return v, nil
		}
	}
	if cfg.PasswordFile != "" {
		b, err := os.ReadFile(cfg.PasswordFile)
		if err != nil {
			return "", fmt.Errorf("redis password file: %w", err)
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	return "", nil
}

func tlsConfig(t config.TLS, host string) (*tls.Config, error) {
	c, err := t.Load("redis.tls")
	if err != nil {
		return nil, err
	}
	if c.ServerName == "" {
		c.ServerName = host
	}
	return c, nil
}

// redactURL prints u with any password replaced.
func redactURL(u *url.URL) string {
	c := *u
	c.RawQuery = ""
	return c.Redacted()
}

var userinfo = regexp.MustCompile(`//[^@/]*@`)

// redactRaw hides the userinfo of a URL that did not even parse.
func redactRaw(s string) string { return userinfo.ReplaceAllString(s, "//xxxxx@") }

// redacted hides a secret in an error's message. The secret can reach an
// error through a library that quotes its input.
type redacted struct {
	err    error
	secret string
}

func (r *redacted) Error() string {
	if r.secret == "" {
		return r.err.Error()
	}
	return strings.ReplaceAll(r.err.Error(), r.secret, "xxxxx")
}

func (r *redacted) Unwrap() error { return r.err }
