package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/stormctl/stormctl/internal/output"
	"github.com/stormctl/stormctl/policy"
	"github.com/stormctl/stormctl/policy/rehearse"
)

func printPolicy(f *Factory, r policyReport, tty bool) error {
	a, w := r.Analysis, f.IO.Out
	head := fmt.Sprintf("call path %s: %s into %s", a.Name, rps(a.RateRPS), a.Entry)
	if a.DeadlineS != nil {
		head += fmt.Sprintf(", deadline %gs", *a.DeadlineS)
	}
	dep := a.Dependency
	if a.DependencyP99S != nil {
		dep += fmt.Sprintf(" (p99 %gs", *a.DependencyP99S)
		if a.DependencySuccess != nil {
			dep += fmt.Sprintf(", success %g", *a.DependencySuccess)
		}
		dep += ")"
	}
	fmt.Fprintf(w, "%s, dependency %s\n\n", head, dep)
	t := output.NewTable(w, tty, "hop", "format", "attempts", "on", "timeout", "backoff", "budget", "pool")
	for _, h := range a.Hops {
		pool := "-"
		if h.Pool != nil {
			pool = fmt.Sprintf("%s %d", h.Pool.Name, h.Pool.Capacity())
			if h.Pool.Shared {
				pool += " (shared)"
			}
		}
		t.Row(h.Service, h.Format, strconv.Itoa(h.Attempts), dash(strings.Join(h.On, ",")), secs(h.TimeoutS), h.Backoff, h.Budget, pool)
	}
	if err := t.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	var byClass []string
	for _, c := range policy.Classes {
		byClass = append(byClass, fmt.Sprintf("%s %g", c, a.WorstCaseAttempts.ByClass[c.String()]))
	}
	s := output.NewTable(w, tty, "figure", "value")
	s.Row("worst-case attempts", fmt.Sprintf("%g per request (%s)", a.WorstCaseAttempts.Total, strings.Join(byClass, ", ")))
	s.Row("occupancy", secs(a.OccupancyS)+" per request ("+a.OccupancyClass+")")
	pool := "?"
	if a.PoolSize != nil {
		pool = fmt.Sprintf("%d %s", *a.PoolSize, a.Pool)
	}
	s.Row("demanded concurrency", num(a.DemandedConcurrency)+" of "+pool)
	s.Row("saturation", rps(a.SaturationRPS)+" failing")
	s.Row("dependency worst", rps(a.DependencyRPSWorst))
	if err := s.Flush(); err != nil {
		return err
	}
	for _, nd := range a.NoData {
		fmt.Fprintf(w, "no data: %s\n", nd)
	}
	fmt.Fprintln(w)
	if len(a.Findings) == 0 {
		fmt.Fprintln(w, "no findings")
	} else {
		ft := output.NewTable(w, tty, "severity", "id", "hop", "message", "fix")
		for _, fd := range a.Findings {
			ft.Row(string(fd.Severity), fd.ID, dash(fd.Hop), fd.Message, fd.Fix)
		}
		if err := ft.Flush(); err != nil {
			return err
		}
	}
	for _, h := range a.Hops {
		for _, n := range h.Notes {
			fmt.Fprintf(w, "note: %s: %s\n", h.Service, n)
		}
	}
	if r.Lab != nil {
		return printLab(f, r.Lab, tty)
	}
	return nil
}

func printLab(f *Factory, c *rehearse.Comparison, tty bool) error {
	w := f.IO.Out
	fmt.Fprintf(w, "\nlab rehearsal: scenario %s, every attempt fails (%s), seed %d, agreement within ±%g%%\n",
		c.Scenario, c.Class, c.Seed, c.Tolerance*100)
	t := output.NewTable(w, tty, "metric", "predicted", "simulated", "agree")
	for _, r := range c.Rows {
		t.Row(r.Metric, num(r.Predicted), num(r.Simulated), yesNo(r.Agree))
	}
	if err := t.Flush(); err != nil {
		return err
	}
	for _, n := range c.Notes {
		fmt.Fprintf(w, "lab note: %s\n", n)
	}
	return nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func num(v *float64) string {
	if v == nil {
		return "no data"
	}
	return strconv.FormatFloat(*v, 'g', 6, 64)
}

func secs(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'g', 6, 64) + "s"
}

func rps(v *float64) string {
	if v == nil {
		return "? rps"
	}
	return strconv.FormatFloat(*v, 'f', 0, 64) + " rps"
}
