package rehearse

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/lab/sim"
	"github.com/stormctl/stormctl/policy"
)

func load(t *testing.T, file string) *policy.Path {
	t.Helper()
	in, err := policy.ReadFiles([]string{filepath.Join("../testdata", file)})
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(in, policy.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLabAgrees rehearses the incident shapes in the lab: the simulated
// amplification, occupancy, demanded concurrency, pool saturation and
// dependency load agree with the arithmetic within Tolerance. Rates are
// lowered where the shape's point does not need the full rate, to keep the
// test quick under -race.
func TestLabAgrees(t *testing.T) {
	slower := func(p *policy.Path) { p.Rate = 100 }
	slowest := func(p *policy.Path) { p.Rate = 50 }
	for _, tc := range []struct {
		file  string
		class policy.Class
		edit  func(*policy.Path)
	}{
		{file: "incidents/shared-pool.yaml", class: policy.Timeout},
		{file: "incidents/lockstep.yaml", class: policy.Timeout, edit: slower},
		{file: "incidents/immediate-retries.yaml", class: policy.Throttled, edit: slower},
		// At 50 rps the risk agent's pool holds what the walk sends it (at
		// 390 rps it saturates, and the lab rejects the excess).
		{file: "incidents/layers.yaml", class: policy.Timeout, edit: slowest},
		{file: "incidents/layers.yaml", class: policy.ServerError, edit: slowest},
		// Full-jitter backoff: the lab sleeps half the ceiling on average.
		{file: "import/grpc-service-config.json#GetStock", class: policy.ConnectError, edit: func(p *policy.Path) {
			p.Rate = 100
			p.Hops[0].Pool = &policy.Pool{Name: "workers", Size: 100, Replicas: 1}
		}},
	} {
		t.Run(filepath.Base(tc.file)+"/"+tc.class.String(), func(t *testing.T) {
			p := load(t, tc.file)
			if tc.edit != nil {
				tc.edit(p)
			}
			cmp, err := Run(context.Background(), p, tc.class, 1)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range cmp.Rows {
				if !r.Agree {
					t.Errorf("%s: predicted %v, simulated %v (tolerance %g)", r.Metric, val(r.Predicted), val(r.Simulated), Tolerance)
				}
			}
			if !cmp.Agree {
				t.Logf("notes: %v", cmp.Notes)
			}
		})
	}
}

func val(v *float64) any {
	if v == nil {
		return nil
	}
	return *v
}

// TestScenarioFormat: the scenario is the lab's own format (it reads back
// with sim.Parse, which validates it) and names the saturating inner pool.
func TestScenarioFormat(t *testing.T) {
	p := load(t, "incidents/layers.yaml")
	sc, data, notes, err := Scenario(p, policy.Timeout)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "layers.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := sim.Find(file)
	if err != nil {
		t.Fatalf("the lab does not read the scenario: %v\n%s", err, data)
	}
	if back.Name != sc.Name || len(back.Services) != 2 || len(back.Services[1].Endpoints[0].Calls[0].Layers) != 2 ||
		!back.Services[0].Endpoints[0].Calls[0].Layers[0].IgnoreDeadline || back.Edge.RPS != 390 {
		t.Errorf("scenario read back: %+v", back)
	}
	if strings.Contains(string(data), ": null") || strings.Contains(string(data), `: ""`) {
		t.Errorf("unset fields written:\n%s", data)
	}
	_ = notes
	cmpNotes := innerSaturation(p, policy.Timeout)
	if len(cmpNotes) != 1 || !strings.Contains(cmpNotes[0], "risk-agent") {
		t.Errorf("want a note on risk-agent's pool, got %v", cmpNotes)
	}
	if _, _, _, err := Scenario(&policy.Path{Hops: p.Hops}, policy.Timeout); err == nil {
		t.Error("a path without a rate gave a scenario")
	}
}

// TestLabCannotCompare: a request held longer than the fault runs, and an
// entry without a pool, are said, not compared as if they could agree.
func TestLabCannotCompare(t *testing.T) {
	in := []policy.Input{{Name: "hang.yaml", Data: []byte("apiVersion: stormctl/v1\nkind: CallPath\nrate: 5/s\n" +
		"hops:\n  - {service: batch, timeout: 200s}\ndependency: {name: warehouse}\n")}}
	p, err := policy.Load(in, policy.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cmp, err := Run(context.Background(), p, policy.Timeout, 1)
	if err != nil {
		t.Fatal(err)
	}
	if cmp.Agree {
		t.Errorf("a 200 s occupancy agreed with a 100 s fault: %+v", cmp.Rows)
	}
	if !slices.ContainsFunc(cmp.Notes, func(n string) bool { return strings.Contains(n, "holds the entry 200s") }) {
		t.Errorf("no note on the occupancy: %v", cmp.Notes)
	}
	for _, r := range cmp.Rows {
		if r.Metric == "pool_saturation" && (r.Predicted != nil || r.Simulated != nil || !r.Agree) {
			t.Errorf("pool_saturation without an entry pool: %v %v", val(r.Predicted), val(r.Simulated))
		}
	}
}
