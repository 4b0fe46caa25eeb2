// Package alerts is where the page arrives: a receiver for Alertmanager's
// webhook (payload version 4) that opens or attaches an incident per alert
// group, journals alert.fired and alert.resolved with the query's value as
// evidence and names the playbook; notifications to chat webhooks for
// every alert handled and lever pulled or released; and the autopilot,
// which runs a playbook up to its first applicable lever unattended as the
// automation identity, only where policy allows it and only through the
// guards of actions/. Deduplication is atomic in Redis (controlplane), so replicas
// and Alertmanager's retries act once per event.
package alerts
