package main

import (
	"fmt"

	"github.com/stormctl/stormctl/internal/yamlfile"
)

// validateReport is one file's verdict in `playbook validate -o json`.
type validateReport struct {
	File     string          `json:"file"`
	OK       bool            `json:"ok"`
	Playbook string          `json:"playbook,omitempty"`
	Steps    int             `json:"steps,omitempty"`
	Version  string          `json:"version,omitempty"`
	Problems yamlfile.Errors `json:"problems,omitempty"`
}

// validateOutput is the whole `playbook validate -o json` document.
type validateOutput struct {
	Files []validateReport `json:"files"`
	Error *errorJSON       `json:"error,omitempty"`
}

// printValidate prints one line per valid file (the problems go to stderr
// as file:line:col) or the structured reports, and returns failed.
func printValidate(f *Factory, reports []validateReport, all yamlfile.Errors, failed error) error {
	perr := f.Print(validateOutput{Files: reports, Error: newErrorJSON(failed)}, func(bool) error {
		for _, r := range reports {
			if r.OK {
				fmt.Fprintf(f.IO.Out, "%s: ok: playbook %s, %d steps, version %s\n", r.File, r.Playbook, r.Steps, r.Version)
			}
		}
		if len(all) > 0 {
			fmt.Fprintln(f.IO.ErrOut, all.Error())
		}
		return nil
	})
	if failed != nil {
		return failed
	}
	return perr
}
