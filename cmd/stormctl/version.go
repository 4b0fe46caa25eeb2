package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version, commit and date are set at link time by the release build
// (.goreleaser.yaml: -X main.version=1.2.3 -X main.commit=... -X main.date=...);
// a plain `go build` falls back to the module version and VCS stamp.
var (
	version = "dev"
	commit  = ""
	date    = ""
)

type versionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Date      string `json:"date,omitempty"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
	// Kubernetes says whether this build links the Kubernetes client
	// (stormctl-actuator, -tags actuator).
	Kubernetes bool `json:"kubernetes"`
}

func buildVersion() versionInfo {
	v := versionInfo{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH, Kubernetes: withKubernetes}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && v.Commit == "":
				v.Commit = s.Value
			case s.Key == "vcs.time" && v.Date == "":
				v.Date = s.Value
			}
		}
	}
	return v
}

func newVersionCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print stormctl's version",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			v := buildVersion()
			return f.Print(v, func(bool) error {
				name := "stormctl"
				if v.Kubernetes {
					name = "stormctl-actuator"
				}
				line := name + " " + v.Version
				if v.Commit != "" {
					line += " " + v.Commit[:min(12, len(v.Commit))]
				}
				if v.Date != "" {
					line += " " + v.Date
				}
				_, err := fmt.Fprintf(f.IO.Out, "%s (%s, %s)\n", line, v.GoVersion, v.Platform)
				return err
			})
		},
	}
}
