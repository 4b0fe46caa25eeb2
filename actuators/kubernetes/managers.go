package kubernetes

// FieldManager is the field manager name of every write the actuator makes.
const FieldManager = "stormctl"

// managerOf names the most recent field manager other than stormctl that
// owns the field at ptr, from the object's metadata.managedFields
// (fieldsV1: "f:<name>" members; an empty set owns the whole subtree, as for
// atomic lists). "" when none can be found.
func managerOf(obj map[string]any, ptr string) string {
	toks, err := splitPointer(ptr)
	if err != nil {
		return ""
	}
	entries, _ := lookup(obj, "/metadata/managedFields")
	list, _ := entries.([]any)
	best, bestTime := "", ""
	for _, e := range list {
		m, _ := e.(map[string]any)
		name, _ := m["manager"].(string)
		if name == "" || name == FieldManager {
			continue
		}
		fields, _ := m["fieldsV1"].(map[string]any)
		if !owns(fields, toks) {
			continue
		}
		if t, _ := m["time"].(string); best == "" || t >= bestTime {
			best, bestTime = name, t
		}
	}
	return best
}

func owns(node map[string]any, toks []string) bool {
	for i, t := range toks {
		if node == nil {
			return false
		}
		if len(node) == 0 && i > 0 {
			return true // an atomic subtree (e.g. a list) owned whole
		}
		next, ok := node["f:"+t]
		if !ok {
			return false
		}
		node, _ = next.(map[string]any)
	}
	return node != nil
}
