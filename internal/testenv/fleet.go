package testenv

import (
	"fmt"
	"time"
)

// FleetDeps are the dependencies every service of a Fleet calls.
var FleetDeps = []string{"payments", "ledger", "search"}

// Fleet describes a fleet of services in the stormctl metric contract, as
// Prometheus stores it after scraping: every series carries the scrape's
// job (the service's name) and instance (pod address) labels.
type Fleet struct {
	Services int
	// Storm maps a service index to its amplification on FleetDeps[0] in
	// the last StormFor of the data (1 elsewhere): retries on timeout
	// make the extra attempts.
	Storm map[int]float64
	// Warm maps a service index to its amplification on FleetDeps[1] over
	// the whole data: below the storm, above normal.
	Warm map[int]float64
	End  time.Time
}

// Fleet's shape: 20 minutes of samples at 15s, the storm in the last 10,
// each call path at 10 requests a second.
const (
	FleetStep     = 15 * time.Second
	FleetSamples  = 81
	FleetStormFor = 10 * time.Minute
	fleetRPS      = 10.0
)

// FleetService names service i: "svc-0042".
func FleetService(i int) string { return fmt.Sprintf("svc-%04d", i) }

// OpenMetrics renders the fleet for PromOptions.OpenMetrics.
func (f Fleet) OpenMetrics() string {
	om := NewOpenMetrics()
	start := f.End.Add(-FleetStep * (FleetSamples - 1))
	stormFrom := FleetSamples - int(FleetStormFor/FleetStep)
	rates := func(normal, storm float64) []float64 {
		v := make([]float64, FleetSamples)
		for i := range v {
			v[i] = normal
			if i > stormFrom {
				v[i] = storm
			}
		}
		return Cumulate(v, FleetStep)
	}
	// Families are written together: requests, then attempts, then retries.
	type path struct {
		labels        map[string]string
		normal, storm float64 // extra attempts per second
	}
	var paths []path
	for i := range f.Services {
		svc := FleetService(i)
		for d, dep := range FleetDeps {
			p := path{labels: map[string]string{"service": svc, "dependency": dep, "job": svc,
				"instance": fmt.Sprintf("10.%d.%d.%d:9464", 1+d, i/250, i%250)}}
			if amp, ok := f.Storm[i]; ok && d == 0 {
				p.storm = (amp - 1) * fleetRPS
			}
			if amp, ok := f.Warm[i]; ok && d == 1 {
				p.normal = (amp - 1) * fleetRPS
				p.storm = p.normal
			}
			paths = append(paths, p)
		}
	}
	for _, p := range paths {
		om.Counter("stormctl_requests_total", p.labels, start, FleetStep, rates(fleetRPS, fleetRPS))
	}
	for _, p := range paths {
		om.Counter("stormctl_attempts_total", with(p.labels, "outcome", "success"), start, FleetStep, rates(fleetRPS, fleetRPS))
		if p.storm > 0 {
			om.Counter("stormctl_attempts_total", with(p.labels, "outcome", "timeout"), start, FleetStep, rates(p.normal, p.storm))
		}
	}
	for _, p := range paths {
		if p.storm > 0 { // a path that never retried has no retries series
			om.Counter("stormctl_retries_total", with(p.labels, "reason", "timeout"), start, FleetStep, rates(p.normal, p.storm))
		}
	}
	return om.String()
}

func with(labels map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for a, b := range labels {
		out[a] = b
	}
	return out
}
