package playbooks

import (
	"fmt"

	"github.com/stormctl/stormctl/internal/exit"
)

// StepError is the step that stopped a run. It unwraps to the cause, so the
// run exits with the cause's code: 4 for a check that failed, 3 for a
// refused guard, 6 for a conflict, 5 for a pending approval.
type StepError struct {
	Step string
	Err  error
}

func (e *StepError) Error() string { return fmt.Sprintf("step %s: %v", e.Step, e.Err) }
func (e *StepError) Unwrap() error { return e.Err }

// RequirementError refuses an action step whose required check did not
// pass. Nothing was changed. It exits 3, like a guard refusal.
type RequirementError struct {
	Step, Required, Outcome string
}

func (e *RequirementError) Error() string {
	return fmt.Sprintf("refused: step %s requires step %s to pass, and it did not (%s)", e.Step, e.Required, e.Outcome)
}

// ExitCode implements exit.Coder.
func (e *RequirementError) ExitCode() int { return exit.Refused }

// ParamError is a missing, unknown or invalid --param. It exits 2.
type ParamError struct{ Msg string }

func (e *ParamError) Error() string { return e.Msg }

// ExitCode implements exit.Coder.
func (e *ParamError) ExitCode() int { return exit.Usage }
