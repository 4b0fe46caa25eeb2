package yamlfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Limits bound the work one input file may cost before or while it is
// parsed. The YAML library stormctl uses needs tens of microseconds and
// about a kilobyte per value, and time that grows with the square of the
// keys of one mapping, so the limits are checked by a cheap scan of the
// bytes before the library sees them.
type Limits struct {
	MaxBytes int64 // file size
	MaxDepth int   // nesting of collections
	MaxNodes int   // values, aliases expanded
	MaxKeys  int   // keys in one mapping
}

// The environment variables that raise (or lower) the limits, for the rare
// real file that needs more, e.g. a large Envoy config dump.
const (
	EnvMaxBytes = "STORMCTL_MAX_INPUT_BYTES"
	EnvMaxDepth = "STORMCTL_MAX_INPUT_DEPTH"
	EnvMaxNodes = "STORMCTL_MAX_INPUT_NODES"
	EnvMaxKeys  = "STORMCTL_MAX_INPUT_KEYS"
)

// Built-in limits. No file stormctl ships or reads in its tests comes near
// them (the largest, a query catalogue, has a few thousand values); a 2 MB
// file at the limits parses in about a second within 100 MB.
const (
	defaultMaxBytes = 8 << 20
	defaultMaxDepth = 64
	defaultMaxNodes = 100_000
	defaultMaxKeys  = 2_000
)

// DefaultLimits are the built-in limits, each overridden by its
// environment variable when that holds a positive number.
func DefaultLimits() Limits {
	return Limits{
		MaxBytes: int64(envInt(EnvMaxBytes, defaultMaxBytes)),
		MaxDepth: envInt(EnvMaxDepth, defaultMaxDepth),
		MaxNodes: envInt(EnvMaxNodes, defaultMaxNodes),
		MaxKeys:  envInt(EnvMaxKeys, defaultMaxKeys),
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(strings.TrimSpace(os.Getenv(name))); err == nil && v > 0 {
		return v
	}
	return def
}

// limitErr is an input that crossed one of the Limits, at the position
// where the limit was reached.
func limitErr(file string, line, col int, env, format string, args ...any) *Error {
	return &Error{File: file, Line: line, Col: col, Msg: fmt.Sprintf(format, args...), Limit: true,
		Fix: "set " + env + " to raise the limit if the file is genuine"}
}

// ReadFile reads the file at path, refusing one larger than MaxBytes
// before reading it (and, for pipes, after reading MaxBytes+1 bytes).
func ReadFile(path string, lim Limits) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > lim.MaxBytes {
		return nil, tooBig(path, st.Size(), lim)
	}
	return ReadAll(path, f, lim)
}

// ReadAll reads r (named name in errors) up to MaxBytes.
func ReadAll(name string, r io.Reader, lim Limits) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, lim.MaxBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > lim.MaxBytes {
		return nil, tooBig(name, -1, lim)
	}
	return data, nil
}

func tooBig(name string, size int64, lim Limits) error {
	what := "more than " + humanBytes(lim.MaxBytes)
	if size >= 0 {
		what = humanBytes(size)
	}
	return limitErr(name, 0, 0, EnvMaxBytes, "file is %s; the limit is %s", what, humanBytes(lim.MaxBytes))
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// IsLimit reports whether err is an input that crossed a limit.
func IsLimit(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Limit
}
