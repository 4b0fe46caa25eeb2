package queries

import (
	"fmt"
	"testing"
)

func TestExplain(t *testing.T) {
	for _, tc := range []struct {
		metrics []string
		present map[string]bool
		missing []string
		msg     string
	}{
		{[]string{"a", "b", "a"}, map[string]bool{"a": true}, []string{"b"}, `metric "b" not found ("a" present)`},
		{[]string{"a", "a"}, nil, []string{"a"}, `metric "a" not found`},
		{[]string{"a", "b"}, map[string]bool{"a": true, "b": true}, nil, `metrics "a", "b" present, but no series match the selector`},
	} {
		nd := explain(tc.metrics, tc.present)
		if fmt.Sprint(nd.Missing) != fmt.Sprint(tc.missing) || nd.Message != tc.msg {
			t.Errorf("explain(%v, %v) = %+v, want %v %q", tc.metrics, tc.present, nd, tc.missing, tc.msg)
		}
	}
}

func TestPresenceQuery(t *testing.T) {
	got := presenceQuery([]string{"envoy_cluster_upstream_rq_total", "odd.name"})
	want := `count by (__name__) ({__name__=~"envoy_cluster_upstream_rq_total|odd\\.name"})`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
