package queries

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/lever"
)

// Params are the user's values for a query. Empty strings are unset; a
// query's templates omit unset params from their selectors. Params a query
// does not declare (Query.Params) are ignored.
type Params struct {
	Service, Dependency, Pool string
	// Window is the rate window; 0 means the query's default (Query.Window).
	Window time.Duration
	// Labels overrides the pack's label names (param or template label name →
	// label), for setups whose metrics use other label names (config
	// packs.P.labels, overridden by services.X.labels).
	Labels map[string]string
}

// Parameter names, as used in catalogue params lists and template functions.
const (
	ParamService    = "service"
	ParamDependency = "dependency"
	ParamPool       = "pool"
	ParamWindow     = "window"
)

// labelParams are the params that become label matchers.
var labelParams = []string{ParamService, ParamDependency, ParamPool}

// Limits on user values. Windows past a month would make Prometheus read far
// more than an incident needs; values past 256 bytes are not label values.
const (
	MaxValueLen = lever.MaxNameLen
	MinWindow   = time.Second
	MaxWindow   = 31 * 24 * time.Hour
)

// AllowedChars describes the label-value charset, for error messages: the
// charset of lever target names, so every target can be queried.
const AllowedChars = lever.NameChars

var labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// ParamError is an invalid parameter value. It exits 2.
type ParamError struct {
	Param, Value, Reason string
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("invalid %s %s: %s", e.Param, strconv.Quote(e.Value), e.Reason)
}

// ExitCode implements exit.Coder.
func (e *ParamError) ExitCode() int { return exit.Usage }

// ValidateValue checks a label value given for param. The charset covers
// real service, pool and cluster names (including Envoy's
// "outbound|8080||svc.ns.svc.cluster.local") and nothing that PromQL could
// read as syntax; values are also escaped when rendered.
func ValidateValue(param, v string) error {
	if len(v) > MaxValueLen {
		return &ParamError{Param: param, Value: v, Reason: fmt.Sprintf("longer than %d bytes", MaxValueLen)}
	}
	for i, r := range v {
		if !lever.NameChar(r) {
			return &ParamError{Param: param, Value: v, Reason: fmt.Sprintf(
				"character %q at byte %d is not allowed; use %s (at most %d bytes)", r, i, AllowedChars, MaxValueLen)}
		}
	}
	return nil
}

// ParseWindow parses a window in Prometheus duration syntax ("30s", "5m",
// "1h30m") and checks it is between MinWindow and MaxWindow.
func ParseWindow(s string) (time.Duration, error) {
	d, err := model.ParseDuration(s)
	if err != nil {
		return 0, &ParamError{Param: ParamWindow, Value: s, Reason: "not a Prometheus duration such as 30s, 5m or 1h30m"}
	}
	return time.Duration(d), checkWindow(time.Duration(d))
}

func checkWindow(d time.Duration) error {
	if d < MinWindow || d > MaxWindow || d%time.Millisecond != 0 {
		return &ParamError{Param: ParamWindow, Value: d.String(), Reason: fmt.Sprintf(
			"must be a whole number of milliseconds between %s and %s", promDuration(MinWindow), promDuration(MaxWindow))}
	}
	return nil
}

// value returns the user's value for a label param.
func (p Params) value(param string) string {
	switch param {
	case ParamService:
		return p.Service
	case ParamDependency:
		return p.Dependency
	case ParamPool:
		return p.Pool
	}
	return ""
}

// validate checks every value and label override of p.
func (p Params) validate() error {
	for _, name := range labelParams {
		if err := ValidateValue(name, p.value(name)); err != nil {
			return err
		}
	}
	for param, label := range p.Labels {
		if !labelNameRE.MatchString(param) {
			return &ParamError{Param: "labels", Value: param, Reason: "label overrides are for " + strings.Join(labelParams, ", ") + " or a label name"}
		}
		if !labelNameRE.MatchString(label) {
			return &ParamError{Param: "labels." + param, Value: label, Reason: "not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)"}
		}
	}
	if p.Window != 0 {
		return checkWindow(p.Window)
	}
	return nil
}

func isLabelParam(name string) bool {
	for _, p := range labelParams {
		if p == name {
			return true
		}
	}
	return false
}

// quote renders v as a PromQL string literal. Validation already keeps
// quotes and backslashes out; escaping anyway means a validation bug cannot
// become an injection.
func quote(v string) string { return strconv.Quote(v) }

func promDuration(d time.Duration) string { return model.Duration(d).String() }

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
