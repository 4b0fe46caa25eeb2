//go:build actuator

package main

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	kube "github.com/stormctl/stormctl/actuators/kubernetes"
)

// The --mapping help names every field a mapping file may have, so a field
// added to the mapping is not left out of the help.
func TestMappingHelpListsEveryField(t *testing.T) {
	fields := strings.FieldsFunc(mappingHelp, func(r rune) bool { return strings.ContainsRune(" ,:{}", r) })
	for _, typ := range []reflect.Type{reflect.TypeFor[kube.MappingFile](), reflect.TypeFor[kube.Mapping](), reflect.TypeFor[kube.ServiceObjects]()} {
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ",")
			if name != "" && name != "-" && !slices.Contains(fields, name) {
				t.Errorf("--mapping help lacks %s.%s (yaml %q): %s", typ.Name(), typ.Field(i).Name, name, mappingHelp)
			}
		}
	}
}
