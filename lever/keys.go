package lever

// Keys names the Redis keys a reader of levers needs in one control-plane
// namespace. All keys share the hash tag {namespace}, so scripts work on
// Redis Cluster. The control plane adds its own bookkeeping keys on top.
type Keys struct {
	prefix string
}

// DefaultNamespace is used when the config names none.
const DefaultNamespace = "default"

// NewKeys returns the key schema for namespace ("" means DefaultNamespace).
func NewKeys(namespace string) Keys {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	return Keys{prefix: "stormctl:{" + namespace + "}:"}
}

// Prefix is the common prefix of every key, e.g. "stormctl:{default}:".
func (k Keys) Prefix() string { return k.prefix }

// Lever is the string key holding a lever's JSON; it carries a PEXPIREAT.
func (k Keys) Lever(kind Kind, target string) string {
	return k.prefix + "lever:" + Member(kind, target)
}

// Index is a sorted set of the members of every lever written and not yet
// reaped, scored by expiry in Unix milliseconds. Readers list levers from it
// and MGET their keys; an absent key means expired or released.
func (k Keys) Index() string { return k.prefix + "levers" }

// Versions is a hash member → version counter; it never expires, so a
// version check still works after a lever has expired.
func (k Keys) Versions() string { return k.prefix + "versions" }

// Changes is the pub/sub channel on which every lever write is published as
// a Change in JSON.
func (k Keys) Changes() string { return k.prefix + "changes" }

// Instances is a sorted set of the ids of the readers that acknowledge what
// they applied (provider instances, flagd clients, actuators), scored by
// their last heartbeat in Unix milliseconds.
func (k Keys) Instances() string { return k.prefix + "instances" }

// Ack is a hash member → version applied by one instance, plus the field
// AckSeenField; it expires unless the instance keeps heartbeating, so an
// instance is live exactly while its ack hash exists.
func (k Keys) Ack(instance string) string { return k.prefix + "ack:" + instance }

// AckSeenField is the ack hash field holding the instance's last heartbeat,
// so the hash exists (and expires) even before any lever was applied.
// Members always contain a colon, so it cannot collide with one.
const AckSeenField = "_seen"
