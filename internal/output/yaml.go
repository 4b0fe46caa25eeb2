package output

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/stormctl/stormctl/internal/sanitize"
)

// jsonToYAML is yaml.JSONToYAML, except that a string holding a control
// character is written double-quoted with \u escapes (YAML's double-quoted
// style reads JSON's escapes), not raw: the YAML stays valid, decodes to
// the exact text, and carries no byte a terminal would act on.
func jsonToYAML(data []byte) ([]byte, error) {
	var v any
	if err := yaml.UnmarshalWithOptions(data, &v, yaml.UseOrderedMap()); err != nil {
		return nil, err
	}
	return yaml.Marshal(quoteHostile(v))
}

// quotedString marshals as a JSON string, which is a YAML double-quoted
// scalar.
type quotedString string

// MarshalYAML implements yaml.BytesMarshaler.
func (q quotedString) MarshalYAML() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(string(q)); err != nil {
		return nil, err
	}
	// JSON leaves C1 controls and bidi overrides raw; escape them too.
	return []byte(sanitize.Line(strings.TrimSuffix(b.String(), "\n"))), nil
}

func quoteHostile(v any) any {
	switch t := v.(type) {
	case string:
		// Newlines and tabs alone are safe and keep YAML's block style.
		if sanitize.Block(t) != t {
			return quotedString(t)
		}
	case yaml.MapSlice:
		for i := range t {
			t[i].Value = quoteHostile(t[i].Value)
		}
	case []any:
		for i := range t {
			t[i] = quoteHostile(t[i])
		}
	}
	return v
}
