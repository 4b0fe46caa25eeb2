package config

// Alerts configures the Alertmanager receiver (`stormctl alerts serve`).
// The autopilot's allow list is Context.Autopilot: lever kind → the
// services a firing alert may pull that kind for unattended, e.g.
// autopilot: {retries: [checkout]}. Absent, autopilot acts nowhere.
type Alerts struct {
	// Playbooks maps a saved query to the playbook its alert names; ""
	// names none. Queries not listed use the built-in mapping.
	Playbooks map[string]string `yaml:"playbooks"`
	// Notify lists the webhooks told of every alert handled and every
	// lever pulled or released.
	Notify []Notify `yaml:"notify"`
	// AlertmanagerURL is Alertmanager's API, for the dashboard's alerts.
	AlertmanagerURL string `yaml:"alertmanager-url"`
	// AutopilotTTL is the TTL of a lever autopilot pulls; default 10m.
	AutopilotTTL Duration `yaml:"autopilot-ttl"`
	// EventLease bounds how long a receiver that died while acting on an
	// alert, or while posting its notice, keeps other replicas from taking
	// it over; default 1m, at least 10s.
	EventLease Duration `yaml:"event-lease"`
}

// Notify is one notification webhook.
type Notify struct {
	URL string `yaml:"url"`
	// HMACEnv names the environment variable holding the key that signs
	// each body (X-Stormctl-Signature: sha256=HEX of timestamp.body).
	HMACEnv string `yaml:"hmac-env"`
	// Template is a Go text/template file rendering the body; unset, the
	// body is Slack-compatible JSON ({"text": ...}).
	Template string `yaml:"template"`
}
