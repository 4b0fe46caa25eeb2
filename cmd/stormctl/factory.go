package main

import (
	"fmt"
	"os"
	"sync"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/iostreams"
	"github.com/stormctl/stormctl/internal/output"
)

// globalFlags are the persistent flags every command accepts.
type globalFlags struct {
	config.Overrides
	output      string
	configPath  string
	queriesDirs []string
}

// Factory hands commands their streams and lazily built dependencies, so
// that `stormctl --help` or a file-only command never reads config or dials
// a server.
type Factory struct {
	IO     *iostreams.IOStreams
	flags  *globalFlags
	getenv func(string) string

	cfgOnce sync.Once
	cfg     *config.Resolved
	cfgErr  error

	prom  promDeps
	store storeDeps
	sign  signerDeps
	// printed is set once Print wrote a result, so that Main does not
	// print a failure as a second document.
	printed bool
}

func newFactory(io *iostreams.IOStreams, getenv func(string) string) *Factory {
	return &Factory{IO: io, flags: &globalFlags{}, getenv: getenv}
}

// Config loads the config file and resolves the context once per run.
func (f *Factory) Config() (*config.Resolved, error) {
	f.cfgOnce.Do(func() {
		path, named := f.configFile()
		if _, err := os.Stat(path); err != nil && named != "" {
			// Only the default file may be absent: a file named on the
			// command line or in the environment that is not there is a
			// mistake to report, not a reason to act without its policy.
			f.cfgErr = exit.NewUsage(fmt.Errorf("%s %s: %w", named, path, err))
			return
		}
		file, err := config.Load(path)
		if err != nil {
			f.cfgErr = exit.NewUsage(err)
			return
		}
		f.cfg, f.cfgErr = file.Resolve(f.flags.Overrides, f.getenv)
		if f.cfgErr != nil {
			f.cfgErr = exit.NewUsage(f.cfgErr)
		}
	})
	return f.cfg, f.cfgErr
}

// configFile is the config file this run reads and what named it:
// --config, else $STORMCTL_CONFIG, else the default path (named "").
func (f *Factory) configFile() (path, named string) {
	if f.flags.configPath != "" {
		return f.flags.configPath, "--config"
	}
	if p := f.getenv(config.EnvConfig); p != "" {
		return p, config.EnvConfig
	}
	return config.DefaultPath(), ""
}

// Output returns the -o format.
func (f *Factory) Output() (output.Format, error) {
	ft, err := output.ParseFormat(f.flags.output)
	return ft, exit.NewUsage(err)
}

// Print writes v in the -o format; table output is produced by table.
func (f *Factory) Print(v any, table func(tty bool) error) error {
	ft, err := f.Output()
	if err != nil {
		return err
	}
	f.printed = true
	if ft == output.Table {
		return table(f.IO.IsStdoutTTY())
	}
	return output.Structured(f.IO.Out, ft, v)
}
