package queries

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// DefaultDashBudget is the dashboard's shared budget: the raw bytes all
// its answers in flight may hold at once, whatever the server sends. A
// fleet refresh reads a few hundred KiB.
const DefaultDashBudget = 32 << 20

// LimitBudget names a cut at the shared budget in warnings and errors.
const LimitBudget = "budget"

// Budget bounds the raw bytes that the answers of one client hold while
// they are read and decoded, together: a long-running reader (the
// dashboard) stays within a fixed memory whatever the server sends, while
// one large answer may still use what the others leave. Each answer may
// read Floor bytes whatever the others hold, so none is starved. It is
// safe for concurrent use.
type Budget struct {
	Max, Floor int64

	mu   sync.Mutex
	used int64
	peak int64
}

// NewBudget shares max bytes; each answer is guaranteed max/64.
func NewBudget(max int64) *Budget { return &Budget{Max: max, Floor: max / 64} }

// Peak is the most bytes held at once so far.
func (b *Budget) Peak() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}

// charge is what one answer holds of a budget, returned when its
// evaluation ends.
type charge struct {
	b    *Budget
	mu   sync.Mutex
	held int64
}

// take reserves n more bytes for the answer; false when neither the
// shared budget nor the answer's floor has room.
func (c *charge) take(n int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.Max && c.held+n > b.Floor {
		return false
	}
	c.held += n
	b.used += n
	b.peak = max(b.peak, b.used)
	return true
}

// release returns everything the answer held.
func (c *charge) release() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.b.mu.Lock()
	c.b.used -= c.held
	c.b.mu.Unlock()
	c.held = 0
}

type chargeKey struct{}

// withCharge opens a charge against the client's budget for one
// evaluation, which must call release when its result is decoded; ctx is
// returned as it is when the client has no budget.
func (c *Client) withCharge(ctx context.Context) (context.Context, *charge) {
	b := c.budget.Load()
	if b == nil {
		return ctx, nil
	}
	ch := &charge{b: b}
	return context.WithValue(ctx, chargeKey{}, ch), ch
}

// SetBudget makes every later answer of c share b (nil: none).
func (c *Client) SetBudget(b *Budget) { c.budget.Store(b) }

// chargeOf is the charge a request is read under: its evaluation's, or a
// charge of its own (released when the body is closed) for calls outside
// the runner; nil without a budget.
func chargeOf(ctx context.Context, budget *atomic.Pointer[Budget]) (ch *charge, own bool) {
	if ch, ok := ctx.Value(chargeKey{}).(*charge); ok {
		return ch, false
	}
	if budget == nil || budget.Load() == nil {
		return nil, false
	}
	return &charge{b: budget.Load()}, true
}

func budgetText(max int64) string {
	return fmt.Sprintf("the %s shared by the answers in flight", sizeOf(max))
}
