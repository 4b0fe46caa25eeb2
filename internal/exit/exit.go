// Package exit defines stormctl's process exit codes and the error types
// that carry them, so every command reports failures the same way.
package exit

import "errors"

// Exit codes, as documented in DESIGN.md and the README.
const (
	OK          = 0 // success
	Error       = 1 // any failure not listed below
	Usage       = 2 // bad flags, arguments or input files
	Refused     = 3 // a guard refused the action
	CheckFailed = 4 // a threshold was breached or an expectation unmet
	Pending     = 5 // the action awaits a second person's approval
	Conflict    = 6 // another active action holds the lever
	// Unreplicated: the write was made but the replicas did not confirm it
	// in time; a failover before they catch up could lose it.
	Unreplicated = 7
)

// Coder is implemented by errors that choose their own exit code. Packages
// define their own typed errors (a guard refusal, a conflict) and implement
// Coder; Main maps any error in a chain to its code with Code.
type Coder interface {
	ExitCode() int
}

// Code returns the exit code for err: 0 for nil, the code of the first
// Coder in its chain, or Error.
func Code(err error) int {
	if err == nil {
		return OK
	}
	var c Coder
	if errors.As(err, &c) {
		return c.ExitCode()
	}
	return Error
}

// UsageError marks bad input from the user: flags, arguments, parameters
// or files that do not validate. It exits 2.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// ExitCode implements Coder.
func (e *UsageError) ExitCode() int { return Usage }

// NewUsage wraps err as a usage error; nil stays nil.
func NewUsage(err error) error {
	if err == nil {
		return nil
	}
	return &UsageError{Err: err}
}

// CheckFailedError reports that a check ran and its expectation was not met.
// It exits 4. The command has usually printed the details already.
type CheckFailedError struct{ Msg string }

func (e *CheckFailedError) Error() string { return e.Msg }

// ExitCode implements Coder.
func (e *CheckFailedError) ExitCode() int { return CheckFailed }

// Silent wraps an error whose message the command has already shown, so
// Main exits with its code without printing it again.
type Silent struct{ Err error }

func (e *Silent) Error() string { return e.Err.Error() }
func (e *Silent) Unwrap() error { return e.Err }
