// Package config loads stormctl's configuration: named contexts in
// $XDG_CONFIG_HOME/stormctl/config.yaml (like kubectl), overridden by the
// STORMCTL_* environment variables and then by command-line flags.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/internal/yamlfile"
)

// Environment variables that override the selected context.
const (
	EnvConfig     = "STORMCTL_CONFIG" // path of the config file itself
	EnvContext    = "STORMCTL_CONTEXT"
	EnvPrometheus = "STORMCTL_PROMETHEUS_URL"
	EnvRedis      = "STORMCTL_REDIS_URL"
	EnvActor      = "STORMCTL_ACTOR"
	EnvSigningKey = "STORMCTL_SIGNING_KEY"
)

// File is the whole config file.
type File struct {
	CurrentContext string              `yaml:"current-context"`
	Contexts       map[string]*Context `yaml:"contexts"`
}

// Context is one named environment: where Prometheus and Redis are, who the
// responder is, and what the services look like.
type Context struct {
	Prometheus    Prometheus         `yaml:"prometheus"`
	Redis         Redis              `yaml:"redis"`
	Actor         string             `yaml:"actor"`
	QueriesDirs   []string           `yaml:"queries-dirs"`
	PlaybooksDirs []string           `yaml:"playbooks-dirs"`
	Services      map[string]Service `yaml:"services"`
	// Packs adapts a query pack to this environment's label names, for
	// every service the pack answers for; Services.X.Labels override it.
	Packs map[string]PackSettings `yaml:"packs"`
	// Inventory, Policy and Evidence configure the guards of actions
	// (see actions.go in this package).
	Inventory Inventory           `yaml:"inventory"`
	Policy    Policy              `yaml:"policy"`
	Evidence  map[string][]string `yaml:"evidence"`
	Journal   Journal             `yaml:"journal"`
	// Alerts and Autopilot configure `stormctl alerts serve` (alerts.go).
	Alerts    Alerts              `yaml:"alerts"`
	Autopilot map[string][]string `yaml:"autopilot"`
}

// Journal configures how this responder signs journal entries.
type Journal struct {
	// SigningKey is an SSH private key file, or a public key file naming
	// the ssh-agent key to sign with; "none" disables signing. Unset, the
	// first ssh-agent key signs, if there is an agent.
	SigningKey string `yaml:"signing-key"`
	// AllowedSigners is the allowed_signers file journal verify checks
	// signatures against by default.
	AllowedSigners string `yaml:"allowed-signers"`
}

// Service says which query pack answers for a service, and optionally which
// label names that pack should use for it.
type Service struct {
	Pack   string            `yaml:"pack"`
	Labels map[string]string `yaml:"labels"`
	// DegradedMode is the degraded mode the service has (the value its
	// degraded lever takes, e.g. defer-payment): the retry playbooks'
	// parameter mode when the autopilot may pull degraded for it.
	DegradedMode string `yaml:"degraded-mode"`
}

// DegradedModes maps each service that names a degraded mode to it.
func (c *Context) DegradedModes() map[string]string {
	out := map[string]string{}
	for name, s := range c.Services {
		if s.DegradedMode != "" {
			out[name] = s.DegradedMode
		}
	}
	return out
}

// PackSettings are one pack's label names in this environment: a query
// param (service, dependency, pool) or a label name the pack's templates
// write, mapped to the label the scraped metrics carry, e.g. service:
// exported_job behind an OpenTelemetry Collector.
type PackSettings struct {
	Labels map[string]string `yaml:"labels"`
}

// LabelsFor returns the label overrides for service answered by pack: the
// context's pack settings, then the service's own labels on top.
func (c *Context) LabelsFor(pack, service string) map[string]string {
	out := map[string]string{}
	for k, v := range c.Packs[pack].Labels {
		out[k] = v
	}
	for k, v := range c.Services[service].Labels {
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Prometheus is how to reach a Prometheus-compatible HTTP API.
type Prometheus struct {
	URL             string            `yaml:"url"`
	BearerTokenFile string            `yaml:"bearer-token-file"`
	BearerTokenEnv  string            `yaml:"bearer-token-env"`
	BasicAuth       *BasicAuth        `yaml:"basic-auth"`
	Headers         map[string]string `yaml:"headers"`
	TLS             TLS               `yaml:"tls"`
	Timeout         Duration          `yaml:"timeout"`
	Limits          PrometheusLimits  `yaml:"limits"`
}

// PrometheusLimits bound what stormctl holds of one Prometheus answer; zero
// takes the default (queries.DefaultMaxBytes, queries.DefaultMaxSeries).
type PrometheusLimits struct {
	MaxBytes  int64 `yaml:"max-bytes"`  // raw bytes of one answer
	MaxSeries int   `yaml:"max-series"` // series, label values or names kept of one answer
}

// BasicAuth is a username and a password read from a file or an environment
// variable; passwords never live in the config file itself.
type BasicAuth struct {
	Username     string `yaml:"username"`
	PasswordFile string `yaml:"password-file"`
	PasswordEnv  string `yaml:"password-env"`
}

// TLS configures server verification and client certificates.
type TLS struct {
	CAFile             string `yaml:"ca-file"`
	CertFile           string `yaml:"cert-file"`
	KeyFile            string `yaml:"key-file"`
	ServerName         string `yaml:"server-name"`
	InsecureSkipVerify bool   `yaml:"insecure-skip-verify"`
}

// Redis is how to reach the control plane.
type Redis struct {
	URL          string `yaml:"url"`
	PasswordEnv  string `yaml:"password-env"`
	PasswordFile string `yaml:"password-file"`
	Namespace    string `yaml:"namespace"`
	TLS          TLS    `yaml:"tls"`
	// WaitReplicas is how many replicas must acknowledge each lever write
	// (Redis WAIT) before it is reported replicated; nil means 1, 0 turns
	// the wait off. WaitTimeout bounds the wait (default 1s, at most 2.5s).
	WaitReplicas *int     `yaml:"wait-replicas"`
	WaitTimeout  Duration `yaml:"wait-timeout"`
}

// Duration is a time.Duration written as "10s" in YAML.
type Duration time.Duration

// UnmarshalYAML parses a Go duration string; an error names its line and
// column.
func (d *Duration) UnmarshalYAML(n ast.Node) error {
	v, err := yamlfile.Duration(n)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// DefaultPath is $XDG_CONFIG_HOME/stormctl/config.yaml, or
// ~/.config/stormctl/config.yaml; STORMCTL_CONFIG overrides both.
func DefaultPath() string {
	if p := os.Getenv(EnvConfig); p != "" {
		return p
	}
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "stormctl", "config.yaml")
}

// Load reads the config file at path. A missing file is an empty config.
func Load(path string) (*File, error) {
	f := &File{}
	if path == "" {
		return f, nil
	}
	data, err := yamlfile.ReadFile(path, yamlfile.DefaultLimits())
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	if err := yamlfile.Decode(path, data, f); err != nil {
		return nil, err
	}
	return f, nil
}

// Overrides are the values given on the command line; empty means unset.
type Overrides struct {
	Context       string
	PrometheusURL string
	RedisURL      string
	Actor         string
	SigningKey    string
}

// Resolved is the effective configuration of one command run.
type Resolved struct {
	Name string // context name, "" when none is configured
	Context
}

// Resolve picks the context (flag, then STORMCTL_CONTEXT, then
// current-context) and applies environment and flag overrides, in that order.
func (f *File) Resolve(o Overrides, getenv func(string) string) (*Resolved, error) {
	name := firstNonEmpty(o.Context, getenv(EnvContext), f.CurrentContext)
	r := &Resolved{Name: name}
	if name != "" {
		c, ok := f.Contexts[name]
		if !ok {
			return nil, fmt.Errorf("context %q is not in the config file (have: %v)", name, f.contextNames())
		}
		r.Context = *c
	}
	r.expandHome(getenv("HOME"))
	r.Prometheus.URL = firstNonEmpty(o.PrometheusURL, getenv(EnvPrometheus), r.Prometheus.URL)
	r.Redis.URL = firstNonEmpty(o.RedisURL, getenv(EnvRedis), r.Redis.URL)
	actor, from := r.Actor, "actor in the context"
	for _, src := range []struct{ v, from string }{{o.Actor, "--actor"}, {getenv(EnvActor), EnvActor}, {r.Actor, from}, {getenv("USER"), "$USER"}} {
		if src.v != "" {
			actor, from = src.v, src.from
			break
		}
	}
	var err error
	if r.Actor, err = sanitize.Actor(actor); err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	r.Journal.SigningKey = firstNonEmpty(o.SigningKey, getenv(EnvSigningKey), r.Journal.SigningKey)
	return r, nil
}

// expandHome replaces a leading ~/ in the context's paths with home, as a
// shell would: config files are written by hand.
func (r *Resolved) expandHome(home string) {
	if home == "" {
		return
	}
	expand := func(p *string) {
		if strings.HasPrefix(*p, "~/") {
			*p = filepath.Join(home, (*p)[2:])
		}
	}
	// The slices are shared with the loaded file; expand copies.
	r.QueriesDirs, r.PlaybooksDirs = slices.Clone(r.QueriesDirs), slices.Clone(r.PlaybooksDirs)
	for i := range r.QueriesDirs {
		expand(&r.QueriesDirs[i])
	}
	for i := range r.PlaybooksDirs {
		expand(&r.PlaybooksDirs[i])
	}
	for _, t := range []*TLS{&r.Prometheus.TLS, &r.Redis.TLS} {
		expand(&t.CAFile)
		expand(&t.CertFile)
		expand(&t.KeyFile)
	}
	expand(&r.Prometheus.BearerTokenFile)
	expand(&r.Redis.PasswordFile)
	expand(&r.Journal.SigningKey)
	expand(&r.Journal.AllowedSigners)
	if r.Prometheus.BasicAuth != nil {
		ba := *r.Prometheus.BasicAuth
		expand(&ba.PasswordFile)
		r.Prometheus.BasicAuth = &ba
	}
}

func (f *File) contextNames() []string {
	names := make([]string, 0, len(f.Contexts))
	for n := range f.Contexts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
