//go:build !linux

package main

import (
	"errors"
	"os"
	"runtime"
)

// openPTY is only written for Linux, where the scripts run.
func openPTY() (master, slave *os.File, err error) {
	return nil, nil, errors.New("no pseudo-terminal support on " + runtime.GOOS)
}
