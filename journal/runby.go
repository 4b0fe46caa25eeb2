package journal

// Who is the entry's actor as people read it: "automation (run by alice)"
// for an unattended run, else the actor.
func (e Entry) Who() string {
	if e.RunBy != "" {
		return e.Actor + " (run by " + e.RunBy + ")"
	}
	return e.Actor
}
