package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/yamlfile"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// seedDoc is state written straight into a control plane, past every
// input check of the CLI, as someone with Redis write access could leave
// it for the next responder.
type seedDoc struct {
	// Levers are applied as they are, each expiring TTL from now.
	Levers []seedLever `json:"levers"`
	// Incidents are stored, each journaled as opened by its opener with
	// its title as the reason; a zero opened_at is now.
	Incidents []actions.Incident `json:"incidents"`
	// Journal entries are appended as they are.
	Journal []journal.Entry `json:"journal"`
}

type seedLever struct {
	lever.Lever
	TTL string `json:"ttl"`
}

// seed writes d into the control plane s.
func seed(ctx context.Context, s *controlplane.Store, d seedDoc) error {
	for _, l := range d.Levers {
		ttl, err := time.ParseDuration(l.TTL)
		if err != nil {
			return fmt.Errorf("lever %s %s: ttl: %w", l.Kind, l.Target, err)
		}
		l.ExpiresAt = time.Now().Add(ttl)
		if _, err := s.Apply(ctx, controlplane.ApplyRequest{Lever: l.Lever}); err != nil {
			return err
		}
	}
	for _, inc := range d.Incidents {
		if inc.OpenedAt.IsZero() {
			inc.OpenedAt = time.Now().UTC()
		}
		raw, err := json.Marshal(inc)
		if err != nil {
			return err
		}
		if _, err := s.SwapRecord(ctx, "incidents", inc.ID, "", string(raw), journal.Entry{Event: journal.IncidentOpened,
			Actor: inc.OpenedBy, Incident: inc.ID, Reason: inc.Title, Outcome: "opened"}); err != nil {
			return err
		}
	}
	for _, e := range d.Journal {
		if _, err := s.Append(ctx, e); err != nil {
			return err
		}
	}
	return nil
}

// cmdSeed writes the levers, incidents and journal entries of a JSON file
// (a seedDoc) into the control plane of the script's context, read from
// $STORMCTL_CONFIG and the environment as stormctl reads them:
// `seed hostile.json`. JSON escapes (\u001b) keep hostile bytes out of
// the script's own text.
func cmdSeed(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: seed FILE")
	}
	lim := yamlfile.DefaultLimits()
	data, err := yamlfile.ReadFile(ts.MkAbs(args[0]), lim)
	ts.Check(err)
	var d seedDoc
	ts.Check(yamlfile.DecodeJSON(args[0], data, &d, lim))
	file, err := config.Load(ts.Getenv(config.EnvConfig))
	ts.Check(err)
	cfg, err := file.Resolve(config.Overrides{}, ts.Getenv)
	ts.Check(err)
	ctx := context.Background()
	s, err := controlplane.Open(ctx, cfg.Redis, ts.Getenv)
	ts.Check(err)
	defer s.Close()
	ts.Check(seed(ctx, s, d))
}
