package config

// Inventory lists the services and dependencies a lever may target, so that
// a typo cannot create a lever. Names also come from Prometheus label
// values when FromPrometheus is true, which is the default when neither
// list is given.
type Inventory struct {
	Services       []string `yaml:"services"`
	Dependencies   []string `yaml:"dependencies"`
	FromPrometheus *bool    `yaml:"from-prometheus"`
	// ServiceLabel and DependencyLabel name the labels whose values are
	// known names; the defaults are "service" and "dependency".
	ServiceLabel    string `yaml:"service-label"`
	DependencyLabel string `yaml:"dependency-label"`
}

// Policy says who may pull which lever, and how far. Unset fields take the
// defaults documented on each.
type Policy struct {
	// Roles maps an actor to a role.
	Roles map[string]string `yaml:"roles"`
	// DefaultRole is the role of actors not in Roles; default "responder".
	DefaultRole string `yaml:"default-role"`
	// Kinds maps a role to the lever kinds it may use. The built-in roles
	// are viewer (none), responder and commander (all); an entry here
	// replaces a built-in role or adds one.
	Kinds map[string][]string `yaml:"kinds"`
	// Approval lists the kinds that need a second, different actor.
	Approval []string `yaml:"approval"`
	// Approvers lists the roles that may approve; empty means any role that
	// may use the kind.
	Approvers []string `yaml:"approvers"`
	// MaxTTL lowers a kind's maximum TTL (it can never raise it).
	MaxTTL map[string]Duration `yaml:"max-ttl"`
	// BlastRadius is how many targets one action may name without an
	// explicit --targets N; default 1.
	BlastRadius int `yaml:"blast-radius"`
	// RateLimit bounds lever changes per actor and overall.
	RateLimit RateLimit `yaml:"rate-limit"`
}

// RateLimit is a budget of applied actions per window; defaults 1m, 6 per
// actor, 20 overall.
type RateLimit struct {
	Window   Duration `yaml:"window"`
	PerActor int      `yaml:"per-actor"`
	Overall  int      `yaml:"overall"`
}
