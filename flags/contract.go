// Package flags is stormctl's flag contract and the OpenFeature provider that
// serves it: services read the levers written by the control plane through
// an OpenFeature client, and learn of every change within milliseconds over
// Redis pub/sub. The package never writes levers.
package flags

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/stormctl/stormctl/controlplane"
)

// The flag keys of the contract (DESIGN.md, "Flag contract").
const (
	RetriesEnabled     = "stormctl.retries.enabled"
	RetriesMaxAttempts = "stormctl.retries.max_attempts"
	BreakerForcedOpen  = "stormctl.breaker.forced_open"
	AutoscalingFrozen  = "stormctl.autoscaling.frozen"
	DegradedMode       = "stormctl.degraded.mode"
	ShedPercent        = "stormctl.shed.percent"
)

// Lever values the flags understand (DESIGN.md, "Levers").
const (
	ValueOff       = "off"    // retries: no retry at all
	ValueCapPrefix = "cap:"   // retries: "cap:N" caps attempts at N
	ValueOpen      = "open"   // breaker: forced open
	ValueFrozen    = "frozen" // autoscaling: frozen
)

// Limits of numeric lever values.
const (
	MaxAttemptsCap = 100 // largest N accepted in "cap:N"
	MaxShedPercent = 100
)

// Type is the OpenFeature type of a flag.
type Type string

// Flag types.
const (
	Bool   Type = "bool"
	Int    Type = "int"
	String Type = "string"
)

// Flag describes one flag of the contract: the lever kind it reads and how a
// lever value maps to the flag value.
type Flag struct {
	Key  string
	Kind controlplane.Kind
	Type Type
	// Absent is the value served when no lever applies; nil means the
	// caller's default value.
	Absent any
	// Mapping documents the lever values and what they mean for this flag.
	Mapping string

	index  int
	absent *value
	parse  func(lever string) (value, error)
}

// Value maps a lever value to this flag's value: bool, int64 or string.
func (f Flag) Value(lever string) (any, error) {
	v, err := f.parse(lever)
	if err != nil {
		return nil, err
	}
	return v.get(f.Type), nil
}

// Table lists every flag of the contract, in the order of DESIGN.md.
var Table = []Flag{
	{Key: RetriesEnabled, Kind: controlplane.Retries, Type: Bool, Absent: true,
		Mapping: `"off" → false; "cap:N" → true`, parse: parseRetriesEnabled},
	{Key: RetriesMaxAttempts, Kind: controlplane.Retries, Type: Int, Absent: nil,
		Mapping: `"cap:N" → N; "off" → 1`, parse: parseMaxAttempts},
	{Key: BreakerForcedOpen, Kind: controlplane.Breaker, Type: Bool, Absent: false,
		Mapping: `"open" → true`, parse: exactly(ValueOpen)},
	{Key: AutoscalingFrozen, Kind: controlplane.Autoscaling, Type: Bool, Absent: false,
		Mapping: `"frozen" → true`, parse: exactly(ValueFrozen)},
	{Key: DegradedMode, Kind: controlplane.Degraded, Type: String, Absent: "",
		Mapping: `a mode name (e.g. "on", "rules-only") → that name`, parse: parseMode},
	{Key: ShedPercent, Kind: controlplane.Shed, Type: Int, Absent: int64(0),
		Mapping: `"N" (1–100) → N`, parse: parseShed},
}

var (
	byKey  = map[string]*Flag{}
	byKind = map[controlplane.Kind][]*Flag{}
)

func init() {
	for i := range Table {
		f := &Table[i]
		f.index = i
		if f.Absent != nil {
			v, _ := valueOf(f.Type, f.Absent)
			f.absent = &v
		}
		byKey[f.Key] = f
		byKind[f.Kind] = append(byKind[f.Kind], f)
	}
}

// Lookup returns the flag with the given key.
func Lookup(key string) (Flag, bool) {
	f, ok := byKey[key]
	if !ok {
		return Flag{}, false
	}
	return *f, true
}

// FlagsOf returns the keys of the flags that read levers of kind.
func FlagsOf(kind controlplane.Kind) []string {
	var keys []string
	for _, f := range byKind[kind] {
		keys = append(keys, f.Key)
	}
	return keys
}

// value is a flag value without boxing, so evaluations do not allocate.
type value struct {
	b bool
	i int64
	s string
}

func (v value) get(t Type) any {
	switch t {
	case Bool:
		return v.b
	case Int:
		return v.i
	default:
		return v.s
	}
}

// valueOf converts a Go value to a flag value of type t (fail-safe options).
func valueOf(t Type, x any) (value, bool) {
	switch t {
	case Bool:
		b, ok := x.(bool)
		return value{b: b}, ok
	case String:
		s, ok := x.(string)
		return value{s: s}, ok
	}
	switch n := x.(type) {
	case int:
		return value{i: int64(n)}, true
	case int64:
		return value{i: n}, true
	}
	return value{}, false
}

func parseRetriesEnabled(lever string) (value, error) {
	if lever == ValueOff {
		return value{b: false}, nil
	}
	if _, err := parseCap(lever); err != nil {
		return value{}, err
	}
	return value{b: true}, nil
}

func parseMaxAttempts(lever string) (value, error) {
	if lever == ValueOff {
		return value{i: 1}, nil
	}
	n, err := parseCap(lever)
	return value{i: n}, err
}

func parseCap(lever string) (int64, error) {
	digits, ok := strings.CutPrefix(lever, ValueCapPrefix)
	if !ok {
		return 0, fmt.Errorf("retries lever %q: want %q or %q", lever, ValueOff, ValueCapPrefix+"N")
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n < 1 || n > MaxAttemptsCap {
		return 0, fmt.Errorf("retries lever %q: N must be an integer from 1 to %d", lever, MaxAttemptsCap)
	}
	return n, nil
}

func exactly(want string) func(string) (value, error) {
	return func(lever string) (value, error) {
		if lever != want {
			return value{}, fmt.Errorf("lever value %q: want %q", lever, want)
		}
		return value{b: true}, nil
	}
}

func parseMode(lever string) (value, error) {
	if strings.TrimSpace(lever) == "" {
		return value{}, fmt.Errorf("degraded lever: empty mode name")
	}
	return value{s: lever}, nil
}

func parseShed(lever string) (value, error) {
	n, err := strconv.ParseInt(lever, 10, 64)
	if err != nil || n < 1 || n > MaxShedPercent {
		return value{}, fmt.Errorf("shed lever %q: want a percent from 1 to %d", lever, MaxShedPercent)
	}
	return value{i: n}, nil
}
