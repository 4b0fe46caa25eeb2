package lever

import (
	"slices"
	"testing"
)

func TestTableMapsLeverValues(t *testing.T) {
	cases := []struct {
		flag, lever string
		want        any // nil: the lever value is refused
	}{
		{RetriesEnabled, "off", false},
		{RetriesEnabled, "cap:3", true},
		{RetriesEnabled, "cap:0", nil},
		{RetriesEnabled, "on", nil},
		{RetriesMaxAttempts, "off", int64(1)},
		{RetriesMaxAttempts, "cap:3", int64(3)},
		{RetriesMaxAttempts, "cap:101", nil},
		{RetriesMaxAttempts, "cap:-1", nil},
		{BreakerForcedOpen, "open", true},
		{BreakerForcedOpen, "closed", nil},
		{AutoscalingFrozen, "frozen", true},
		{AutoscalingFrozen, "", nil},
		{DegradedMode, "rules-only", "rules-only"},
		{DegradedMode, " ", nil},
		{ShedPercent, "25", int64(25)},
		{ShedPercent, "0", nil},
		{ShedPercent, "101", nil},
		{ShedPercent, "25%", nil},
	}
	for _, tc := range cases {
		f, ok := Lookup(tc.flag)
		if !ok {
			t.Fatalf("Lookup(%s) failed", tc.flag)
		}
		got, err := f.Value(tc.lever)
		if (err != nil) != (tc.want == nil) || (err == nil && got != tc.want) {
			t.Errorf("%s(%q) = %v, %v; want %v", tc.flag, tc.lever, got, err, tc.want)
		}
	}
	var keys []string
	for _, f := range FlagsOf(Retries) {
		keys = append(keys, f.Key)
	}
	if !slices.Equal(keys, []string{RetriesEnabled, RetriesMaxAttempts}) {
		t.Errorf("FlagsOf(retries) = %v", keys)
	}
	for _, k := range Kinds {
		if len(FlagsOf(k)) == 0 {
			t.Errorf("lever kind %s has no flag", k)
		}
	}
}

// FuzzFlagValue: any lever value maps to a well-typed value within the
// contract's bounds, or to an error.
func FuzzFlagValue(f *testing.F) {
	for _, s := range []string{"off", "cap:3", "cap:", "cap:99999999999999999999", "open", "frozen", "on", "50", "-1", "", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, lever string) {
		for _, fl := range Table {
			got, err := fl.Value(lever)
			if err != nil {
				continue
			}
			switch v := got.(type) {
			case bool:
				if fl.Type != Bool {
					t.Fatalf("%s: bool for a %s flag", fl.Key, fl.Type)
				}
			case int64:
				if fl.Type != Int || v < 1 || v > max(MaxAttemptsCap, MaxShedPercent) {
					t.Fatalf("%s(%q) = %d", fl.Key, lever, v)
				}
			case string:
				if fl.Type != String || v != lever {
					t.Fatalf("%s(%q) = %q", fl.Key, lever, v)
				}
			default:
				t.Fatalf("%s: value of type %T", fl.Key, got)
			}
		}
	})
}
