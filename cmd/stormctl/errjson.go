package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/output"
	"github.com/stormctl/stormctl/lever"
)

// errorJSON is how -o json and -o yaml report a failure on stdout, so a
// script reads one document whether the command succeeded or not: the
// message and exit code always, and for a guard's refusal the guard, the
// reason, what would let it through and the journal entries that record it.
type errorJSON struct {
	Message        string       `json:"message"`
	ExitCode       int          `json:"exit_code"`
	Guard          string       `json:"guard,omitempty"`
	Reason         string       `json:"reason,omitempty"`
	Hint           string       `json:"hint,omitempty"`
	Holder         *lever.Lever `json:"holder,omitempty"`
	JournalEntries []string     `json:"journal_entries,omitempty"`
	JournaledLocal bool         `json:"journaled_locally,omitempty"`
	RequestID      string       `json:"request_id,omitempty"`
}

func newErrorJSON(err error) *errorJSON {
	if err == nil {
		return nil
	}
	e := &errorJSON{Message: err.Error(), ExitCode: exit.Code(err)}
	var ref *actions.RefusedError
	if errors.As(err, &ref) {
		e.Guard, e.Reason, e.Hint, e.Holder = ref.Guard, ref.Reason, ref.Hint, ref.Holder
		e.JournalEntries, e.JournaledLocal = ref.Entries, ref.Local
	}
	var pending *actions.PendingError
	if errors.As(err, &pending) && !pending.Planned {
		e.RequestID = pending.Request.ID
	}
	return e
}

// failureDoc is the document printed for a failed command that printed
// nothing else.
type failureDoc struct {
	Error *errorJSON `json:"error"`
}

// printFailure writes err as a structured document when -o asks for one;
// it writes nothing for table output or an invalid -o.
func printFailure(w io.Writer, format string, err error) {
	ft, ferr := output.ParseFormat(format)
	switch {
	case ferr != nil || ft == output.Table:
		return
	case ft == output.JSON:
		// One line, so that it is also a valid line of JSON Lines (journal
		// tail -o json) after any entries printed before the failure.
		data, _ := json.Marshal(failureDoc{Error: newErrorJSON(err)})
		_, _ = fmt.Fprintf(w, "%s\n", data)
		return
	}
	_ = output.Structured(w, ft, failureDoc{Error: newErrorJSON(err)})
}

// textOnly refuses -o json and -o yaml for a command whose output is a
// format of its own (a timeline, a terminal screen); the refusal itself
// reaches stdout as {"error": ...}.
func textOnly(f *Factory, what, instead string) error {
	ft, err := f.Output()
	if err != nil || ft == output.Table {
		return err
	}
	return exit.NewUsage(fmt.Errorf("%s has no -o %s; %s", what, ft, instead))
}
