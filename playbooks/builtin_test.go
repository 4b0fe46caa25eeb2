package playbooks

import (
	"testing"

	"github.com/stormctl/stormctl/queries"
)

func catalog(t testing.TB) *queries.Catalog {
	t.Helper()
	cat, err := queries.Load()
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func TestBuiltinsLoad(t *testing.T) {
	set, err := Load(catalog(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, pb := range set.List() {
		names = append(names, pb.Name)
	}
	t.Log(names)
}
