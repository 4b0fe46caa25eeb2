package queries

import (
	"testing"
)

func TestBuiltinsLoad(t *testing.T) {
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range c.Queries() {
		t.Logf("%s %v", q.ID, q.Answers())
	}
}
