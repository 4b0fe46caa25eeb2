package actions

import "github.com/stormctl/stormctl/internal/sanitize"

// plainInput is free text as the journal keeps it: line breaks folded to
// spaces. Text with other control characters (an ESC sequence, OSC 52, a
// bidi override) is kept only in its escaped, printable form, with the
// error that makes the guards refuse it.
func plainInput(field, s string) (string, error) {
	clean, err := sanitize.Input(field, s)
	if err != nil {
		return sanitize.Line(s), err
	}
	return clean, nil
}

// actorInput is an actor name under sanitize.Actor's rule (NFC, nothing
// that does not print as itself). A refused name is kept in its escaped,
// printable form for the journal, with the error that makes the validation
// guard refuse it. The CLI refuses such a name earlier, as a usage error;
// this catches library callers (playbooks, alerts, the lab).
func actorInput(s string) (string, error) {
	clean, err := sanitize.Actor(s)
	if err != nil {
		return sanitize.Line(s), err
	}
	return clean, nil
}

// checkInput refuses an attempt whose actor or reason is not plain text.
func (a *attempt) checkInput(field string) verdict {
	if err := a.inputErrs[field]; err != nil {
		return refusal("type it as plain text: it is printed on every responder's terminal and in every export", "%v", err)
	}
	return verdict{}
}
