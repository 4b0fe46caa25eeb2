package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/flags"
	"github.com/stormctl/stormctl/flags/flagd"
	"github.com/stormctl/stormctl/internal/atomicfile"
	"github.com/stormctl/stormctl/internal/exit"
)

type flagsExportOptions struct {
	format, out, selector string
	watch                 bool
	timeout               time.Duration
}

// flagsExportWritten, when set (by tests), is called after each write with
// a function that stops a --watch as SIGTERM would.
var flagsExportWritten func(version string, stop context.CancelFunc)

func newFlagsExportCmd(f *Factory) *cobra.Command {
	o := &flagsExportOptions{}
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write the levers as a flagd flag file (for fleets running flagd itself)",
		Long: `Write the levers as a flagd flag configuration, the same one "stormctl flagd
serve" sends, validated by flagd's own evaluator. With --out the file is
written atomically (temporary file and rename) for flagd's file sync or a
ConfigMap; --watch rewrites it on every lever change and at every expiry.`,
		Example: `  stormctl flags export --format flagd --out /etc/flagd/stormctl.flagd.json --watch`,
		Args:    usageArgs(cobra.NoArgs),
		RunE:    func(cmd *cobra.Command, _ []string) error { return runFlagsExport(cmd.Context(), f, o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.format, "format", "flagd", "file format: flagd")
	fl.StringVar(&o.out, "out", "", "file to write (default: stdout)")
	fl.BoolVar(&o.watch, "watch", false, "keep running and rewrite on every change and expiry (needs --out)")
	fl.StringVar(&o.selector, "selector", "", "only the rules a client with this selector can match, e.g. service=checkout")
	fl.DurationVar(&o.timeout, "timeout", 10*time.Second, "how long to wait for Redis for the first read")
	return cmd
}

func runFlagsExport(ctx context.Context, f *Factory, o *flagsExportOptions) error {
	if err := textOnly(f, "flags export", "its --format flagd is flagd's own JSON flag configuration"); err != nil {
		return err
	}
	if o.format != "flagd" {
		return exit.NewUsage(fmt.Errorf("--format %q: the only format is flagd", o.format))
	}
	if o.watch && o.out == "" {
		return exit.NewUsage(errors.New("--watch rewrites a file: give --out"))
	}
	sel, err := flagd.ParseSelector(o.selector)
	if err != nil {
		return exit.NewUsage(err)
	}
	v, err := flagd.NewValidator()
	if err != nil {
		return err
	}
	client, display, ns, err := dialRedis(f)
	if err != nil {
		return err
	}
	defer client.Close()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The final error says what went wrong; the provider's retries stay quiet.
	p := flags.NewProvider(client, flags.Namespace(ns), flags.ErrorAfter(o.timeout),
		flags.Logger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer func() { _ = p.ShutdownWithContext(context.Background()) }()
	var got, timedOut atomic.Bool
	if !o.watch {
		t := time.AfterFunc(o.timeout, func() {
			if !got.Load() {
				timedOut.Store(true)
				stop()
			}
		})
		defer t.Stop()
	}
	var last string
	var werr error
	flagd.Follow(ctx, p, nil, 2*time.Second, func(in flagd.Input) {
		got.Store(true)
		if ver := flagd.Version(in); ver != last {
			raw := flagd.Render(in, sel).Marshal()
			werr = v.Validate(raw, in, sel)
			if werr == nil {
				werr = writeExport(f, o.out, append(raw, '\n'))
			}
			switch {
			case werr != nil && o.watch:
				fmt.Fprintf(f.IO.ErrOut, "flags export: %v; the previous file stays\n", werr)
			case werr == nil:
				last = ver
				if o.watch {
					fmt.Fprintf(f.IO.ErrOut, "flags export: wrote %s (version %s, %d levers)\n", o.out, ver, len(in.Levers))
				}
				if flagsExportWritten != nil {
					flagsExportWritten(ver, stop)
				}
			}
		}
		if !o.watch {
			stop()
		}
	})
	if timedOut.Load() {
		return &controlplane.UnavailableError{Addr: display, Op: "read the levers for flags export (nothing written)",
			Err: errors.New("no full read within " + o.timeout.String())}
	}
	return werr
}

func writeExport(f *Factory, path string, raw []byte) error {
	if path == "" {
		_, err := f.IO.Out.Write(raw)
		return err
	}
	return atomicfile.WriteFile(path, raw, 0o644)
}
