package journal

import "errors"

// ErrUnavailable matches errors caused by the control plane's Redis being
// unreachable; Writer falls back to the local pending file on them.
var ErrUnavailable = errors.New("control plane unavailable")
