package rehearse

import (
	"bytes"
	"fmt"

	"github.com/goccy/go-yaml"

	"github.com/stormctl/stormctl/lab/sim"
)

// meaningfulZero are the keys of a fault whose zero differs from their
// absence (pointer fields): 0 sets the value, absence keeps the
// dependency's.
var meaningfulZero = map[string]bool{"error_share": true, "max_start_rate": true}

// Marshal writes sc in the lab's scenario YAML, leaving out what is unset,
// and checks that the lab reads it back (sim.Parse, with its defaults and
// validation); the scenario returned is the one read back.
func Marshal(sc *sim.Scenario) ([]byte, *sim.Scenario, error) {
	raw, err := yaml.Marshal(sc)
	if err != nil {
		return nil, nil, err
	}
	var tree yaml.MapSlice
	if err := yaml.UnmarshalWithOptions(raw, &tree, yaml.UseOrderedMap()); err != nil {
		return nil, nil, err
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# A stormctl lab scenario: stormctl lab run --scenario FILE\n")
	out, err := yaml.MarshalWithOptions(prune(tree, false), yaml.Flow(false))
	if err != nil {
		return nil, nil, err
	}
	buf.Write(out)
	back, err := sim.Parse(sc.Name+".yaml", buf.Bytes())
	if err != nil {
		return nil, nil, fmt.Errorf("generated scenario does not validate: %w", err)
	}
	return buf.Bytes(), back, nil
}

// prune drops unset values; inFault keeps the fault's meaningful zeros.
func prune(v any, inFault bool) any {
	switch t := v.(type) {
	case yaml.MapSlice:
		out := yaml.MapSlice{}
		for _, it := range t {
			key := fmt.Sprint(it.Key)
			pv := prune(it.Value, key == "faults")
			if empty(pv) && !(inFault && meaningfulZero[key] && pv != nil) {
				continue
			}
			out = append(out, yaml.MapItem{Key: it.Key, Value: pv})
		}
		return out
	case []any:
		out := make([]any, 0, len(t))
		for _, e := range t {
			out = append(out, prune(e, inFault))
		}
		return out
	}
	return v
}

func empty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == "" || t == "0s"
	case bool:
		return !t
	case uint64:
		return t == 0
	case int64:
		return t == 0
	case int:
		return t == 0
	case float64:
		return t == 0
	case yaml.MapSlice:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}
