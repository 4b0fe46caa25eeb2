package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
)

// onTTY is the `ontty` program of the scripts: `exec ontty stormctl status`
// runs the command with its standard output on a new pseudo-terminal, as on
// a responder's screen, and copies what reaches that terminal to its own
// stdout for the stdout assertions; stdin and stderr are passed through,
// so only stdout is a terminal. It exits with the command's code. The
// terminal turns each "\n" into "\r\n", as every terminal does.
func onTTY(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: ontty command [args...]")
		return 2
	}
	master, slave, err := openPTY()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ontty:", err)
		return 1
	}
	defer master.Close()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, slave, os.Stderr
	err = cmd.Start()
	// Only the command holds the terminal now, so the master reads EIO
	// (end of file for a terminal) once it has exited.
	slave.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ontty:", err)
		return 1
	}
	copied := make(chan error, 1)
	go func() {
		_, err := io.Copy(os.Stdout, master)
		copied <- err
	}()
	err = cmd.Wait()
	if cerr := <-copied; cerr != nil && !errors.Is(cerr, syscall.EIO) {
		fmt.Fprintln(os.Stderr, "ontty: reading the terminal:", cerr)
		return 1
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ontty:", err)
		return 1
	}
	return 0
}
