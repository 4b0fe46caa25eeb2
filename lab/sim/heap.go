package sim

import "time"

type evKind uint8

const (
	evArrival evKind = iota
	evWorkDone
	evPoolTimeout
	evDeadline
	evTimeout
	evBackoff
	evJobDone
	evTick
	evAutoscale
	evPodReady
	evRestart
)

// ref names one incarnation of a slab slot: a reference whose gen no longer
// matches the slot's is stale, which is how cancelled timers and answers to
// abandoned callers are ignored without searching the heap.
type ref struct {
	id  int32
	gen uint32
}

// event is a value type, so the heap holds no pointers for the GC to scan.
type event struct {
	at   time.Duration
	seq  uint64 // ties broken by scheduling order: the run is deterministic
	kind evKind
	ref  ref
}

type eventHeap []event

func (h eventHeap) less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}

func (h *eventHeap) push(e event) {
	*h = append(*h, e)
	q := *h
	i := len(q) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (h *eventHeap) pop() event {
	q := *h
	top := q[0]
	n := len(q) - 1
	q[0] = q[n]
	q = q[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && q.less(r, l) {
			m = r
		}
		if !q.less(m, i) {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	*h = q
	return top
}

// slab stores entities by index with free-list reuse and a generation per
// slot, so hot paths allocate nothing once the slab has grown. Items are
// allocated once per slot, so pointers stay valid while the slab grows.
type slab[T any] struct {
	items []*T
	gens  []uint32
	free  []int32
}

func (s *slab[T]) alloc() ref {
	var zero T
	if n := len(s.free); n > 0 {
		id := s.free[n-1]
		s.free = s.free[:n-1]
		*s.items[id] = zero
		return ref{id, s.gens[id]}
	}
	s.items = append(s.items, new(T))
	s.gens = append(s.gens, 0)
	return ref{int32(len(s.items) - 1), 0}
}

// get returns the item if r is current, else nil.
func (s *slab[T]) get(r ref) *T {
	if r.id < 0 || int(r.id) >= len(s.items) || s.gens[r.id] != r.gen {
		return nil
	}
	return s.items[r.id]
}

// bump invalidates every outstanding ref to r's slot and returns the new one.
func (s *slab[T]) bump(r ref) ref {
	s.gens[r.id]++
	return ref{r.id, s.gens[r.id]}
}

func (s *slab[T]) release(r ref) {
	s.gens[r.id]++
	s.free = append(s.free, r.id)
}

// ring is a FIFO of refs.
type ring struct {
	buf        []ref
	head, size int
}

func (q *ring) push(r ref) {
	if q.size == len(q.buf) {
		nb := make([]ref, max(16, 2*len(q.buf)))
		for i := 0; i < q.size; i++ {
			nb[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = nb, 0
	}
	q.buf[(q.head+q.size)%len(q.buf)] = r
	q.size++
}

func (q *ring) pop() (ref, bool) {
	if q.size == 0 {
		return ref{}, false
	}
	r := q.buf[q.head]
	q.head = (q.head + 1) % len(q.buf)
	q.size--
	return r, true
}

// freeSet marks the slots on the free list (not allocated), for rare
// whole-fleet events that walk every slot.
func (s *slab[T]) freeSet() []bool {
	free := make([]bool, len(s.items))
	for _, id := range s.free {
		free[id] = true
	}
	return free
}
