package lever

import (
	"fmt"
	"strconv"
	"strings"
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

// Type is the OpenFeature type of a flag.
type Type string

// Flag types.
const (
	Bool   Type = "bool"
	Int    Type = "int"
	String Type = "string"
)

// Value is a flag value without boxing, so evaluations do not allocate;
// the field of the flag's Type holds it.
type Value struct {
	Bool   bool
	Int    int64
	String string
}

// Get returns the value as bool, int64 or string.
func (v Value) Get(t Type) any {
	switch t {
	case Bool:
		return v.Bool
	case Int:
		return v.Int
	default:
		return v.String
	}
}

// Flag describes one flag of the contract: the lever kind it reads and how a
// lever value maps to the flag value.
type Flag struct {
	Key  string
	Kind Kind
	Type Type
	// Absent is the value served when no lever applies; nil means the
	// caller's default value.
	Absent any
	// Mapping documents the lever values and what they mean for this flag.
	Mapping string
	// Index is the flag's position in Table, so readers can keep per-flag
	// values in slices.
	Index int

	parse func(lever string) (Value, error)
}

// Parse maps a lever value to this flag's value.
func (f Flag) Parse(lever string) (Value, error) { return f.parse(lever) }

// Value maps a lever value to this flag's value: bool, int64 or string.
func (f Flag) Value(lever string) (any, error) {
	v, err := f.parse(lever)
	if err != nil {
		return nil, err
	}
	return v.Get(f.Type), nil
}

// AbsentValue is Absent as a Value; ok is false when the flag has no value
// of its own without a lever (the caller's default applies).
func (f Flag) AbsentValue() (v Value, ok bool) {
	if f.Absent == nil {
		return Value{}, false
	}
	return f.Coerce(f.Absent)
}

// Coerce converts a Go value (bool; int or int64; string) to a value of the
// flag's type, as configured fail-safe values are given; ok is false when
// the type does not fit.
func (f Flag) Coerce(x any) (Value, bool) {
	switch f.Type {
	case Bool:
		b, ok := x.(bool)
		return Value{Bool: b}, ok
	case String:
		s, ok := x.(string)
		return Value{String: s}, ok
	}
	switch n := x.(type) {
	case int:
		return Value{Int: int64(n)}, true
	case int64:
		return Value{Int: n}, true
	}
	return Value{}, false
}

// Table lists every flag of the contract, in the order of DESIGN.md.
var Table = []Flag{
	{Key: RetriesEnabled, Kind: Retries, Type: Bool, Absent: true,
		Mapping: `"off" → false; "cap:N" → true`, parse: parseRetriesEnabled},
	{Key: RetriesMaxAttempts, Kind: Retries, Type: Int, Absent: nil,
		Mapping: `"cap:N" → N; "off" → 1`, parse: parseMaxAttempts},
	{Key: BreakerForcedOpen, Kind: Breaker, Type: Bool, Absent: false,
		Mapping: `"open" → true`, parse: exactly(ValueOpen)},
	{Key: AutoscalingFrozen, Kind: Autoscaling, Type: Bool, Absent: false,
		Mapping: `"frozen" → true`, parse: exactly(ValueFrozen)},
	{Key: DegradedMode, Kind: Degraded, Type: String, Absent: "",
		Mapping: `a mode name (e.g. "on", "rules-only") → that name`, parse: parseModeFlag},
	{Key: ShedPercent, Kind: Shed, Type: Int, Absent: int64(0),
		Mapping: `"N" (1–100) → N`, parse: parseShed},
}

var (
	byKey  = map[string]*Flag{}
	byKind = map[Kind][]Flag{}
)

func init() {
	for i := range Table {
		f := &Table[i]
		f.Index = i
		byKey[f.Key] = f
		byKind[f.Kind] = append(byKind[f.Kind], *f)
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

// FlagsOf returns the flags that read levers of kind, in Table order.
func FlagsOf(kind Kind) []Flag { return byKind[kind] }

func parseRetriesEnabled(lever string) (Value, error) {
	if lever == ValueOff {
		return Value{Bool: false}, nil
	}
	if _, err := parseCap(lever); err != nil {
		return Value{}, err
	}
	return Value{Bool: true}, nil
}

func parseMaxAttempts(lever string) (Value, error) {
	if lever == ValueOff {
		return Value{Int: 1}, nil
	}
	n, err := parseCap(lever)
	return Value{Int: n}, err
}

func parseCap(lever string) (int64, error) {
	digits, ok := strings.CutPrefix(lever, ValueCapPrefix)
	if !ok {
		return 0, fmt.Errorf("retries lever %s: want %q or %q", Quote(lever), ValueOff, ValueCapPrefix+"N")
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n < 1 || n > MaxAttemptsCap {
		return 0, fmt.Errorf("retries lever %s: N must be an integer from 1 to %d", Quote(lever), MaxAttemptsCap)
	}
	return n, nil
}

func exactly(want string) func(string) (Value, error) {
	return func(lever string) (Value, error) {
		if lever != want {
			return Value{}, fmt.Errorf("lever value %s: want %q", Quote(lever), want)
		}
		return Value{Bool: true}, nil
	}
}

func parseModeFlag(lever string) (Value, error) {
	if strings.TrimSpace(lever) == "" {
		return Value{}, fmt.Errorf("degraded lever: empty mode name")
	}
	return Value{String: lever}, nil
}

func parseShed(lever string) (Value, error) {
	n, err := strconv.ParseInt(lever, 10, 64)
	if err != nil || n < 1 || n > MaxShedPercent {
		return Value{}, fmt.Errorf("shed lever %s: want a percent from 1 to %d", Quote(lever), MaxShedPercent)
	}
	return Value{Int: n}, nil
}

// KeysOf returns the keys of the flags that read levers of kind.
func KeysOf(kind Kind) []string {
	var keys []string
	for _, f := range byKind[kind] {
		keys = append(keys, f.Key)
	}
	return keys
}
