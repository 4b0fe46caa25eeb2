package signals

import "github.com/stormctl/stormctl/lever"

// withDoctorHint offers `stormctl query doctor` on a panel with no data:
// no data most often means the pack or its label names do not fit this
// Prometheus, which the doctor finds out and writes the config for.
func withDoctorHint(note, service string) string {
	cmd := "stormctl query doctor"
	if service != "" && lever.CheckName("service", service) == nil {
		cmd += " --service " + service
	}
	if note == "" {
		return "try " + cmd
	}
	// The hint first: a narrow panel truncates the end.
	return "try " + cmd + " · " + note
}
