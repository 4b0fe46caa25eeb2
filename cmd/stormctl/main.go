// Command stormctl is the incident-response dashboard and control-plane CLI
// for retry storms.
package main

import (
	"os"

	"github.com/stormctl/stormctl/internal/iostreams"
)

func main() { os.Exit(Main(os.Args[1:], iostreams.System())) }
