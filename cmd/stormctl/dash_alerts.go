package main

import (
	"net/http"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/alertmanager"
	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/tui"
)

// dashAlerts adds the alerts section's sources: Alertmanager when the
// context names it (alerts.alertmanager-url), and the autopilot beside it
// or when the context lets it act, if Redis is there to read it from (nil
// store: it is not). Neither configured, the layout stays as it was.
func dashAlerts(deps *tui.Deps, cfg *config.Resolved, store *controlplane.Store) {
	if u := cfg.Alerts.AlertmanagerURL; u != "" {
		deps.Alerts = &alertmanager.Client{URL: u, HTTP: &http.Client{Timeout: alertmanager.DefaultTimeout}}
	}
	if store != nil && (deps.Alerts != nil || len(cfg.Autopilot) > 0) {
		deps.Autopilot = tui.ServiceAutopilot{Service: &actions.Service{Store: actions.FromStore(store), Clock: actions.SystemClock{}},
			Allowed: len(cfg.Autopilot) > 0}
	}
}
