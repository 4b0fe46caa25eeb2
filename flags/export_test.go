package flags

// WithoutPush turns the change feed off, leaving the resync as the only
// update path: the polling baseline of BenchmarkPropagation.
func WithoutPush() Option { return func(o *options) { o.push = false } }
