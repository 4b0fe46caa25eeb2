package report

import (
	"testing"

	"github.com/stormctl/stormctl/alerts"
	"github.com/stormctl/stormctl/journal"
)

// TestAlertFiredIsTheReceiversEvent: the report dates detection by the
// event the alert receiver journals.
func TestAlertFiredIsTheReceiversEvent(t *testing.T) {
	if journal.AlertFired != alerts.AlertFired {
		t.Errorf("journal.AlertFired %q, the receiver journals %q", journal.AlertFired, alerts.AlertFired)
	}
}
