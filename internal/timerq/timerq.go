// Package timerq is an indexed min-heap of deadlines: each item knows its
// position, so its deadline can move in place. An endpoint keeps one entry
// per QP and arms a single timer at the minimum.
package timerq

import "github.com/openmrc/mrc/mtime"

// Node is the bookkeeping an item embeds. The zero value is not in a heap
// only once Init has set Index to -1; use NewNode or call Init.
type Node struct {
	index int
	key   mtime.Time
}

// Init marks n as not queued.
func (n *Node) Init() { n.index, n.key = -1, mtime.Never }

// Queued reports whether n is in a heap.
func (n *Node) Queued() bool { return n.index >= 0 }

// Key returns the deadline n is queued with, or mtime.Never.
func (n *Node) Key() mtime.Time { return n.key }

// Item is what a Heap holds: a pointer type with an embedded Node.
type Item interface {
	comparable
	TimerNode() *Node
}

// Heap is a binary min-heap of items by deadline. The zero value is empty.
// It is not safe for concurrent use. Each entry holds its item's deadline
// beside it, so ordering the heap reads no item: an endpoint's QPs are
// large and far apart in memory, and reading each one's Node cost a cache
// miss per level.
type Heap[T Item] struct{ items []entry[T] }

type entry[T Item] struct {
	key mtime.Time
	x   T
}

// Len returns the number of items.
func (h *Heap[T]) Len() int { return len(h.items) }

// Min returns the earliest deadline, or mtime.Never.
func (h *Heap[T]) Min() mtime.Time {
	if len(h.items) == 0 {
		return mtime.Never
	}
	return h.items[0].key
}

// Peek returns the item with the earliest deadline; ok is false if empty.
func (h *Heap[T]) Peek() (x T, ok bool) {
	if len(h.items) == 0 {
		return x, false
	}
	return h.items[0].x, true
}

// Set queues x with deadline t, or moves it there if already queued.
func (h *Heap[T]) Set(x T, t mtime.Time) {
	n := x.TimerNode()
	n.key = t
	if n.index < 0 {
		n.index = len(h.items)
		h.items = append(h.items, entry[T]{t, x})
		h.up(n.index)
		return
	}
	h.items[n.index].key = t
	h.up(n.index)
	h.down(n.index)
}

// Remove takes x out of the heap, if queued.
func (h *Heap[T]) Remove(x T) {
	if i := x.TimerNode().index; i >= 0 {
		h.removeAt(i)
	}
}

func (h *Heap[T]) removeAt(i int) {
	x := h.items[i].x
	last := len(h.items) - 1
	if i != last {
		h.swap(i, last)
	}
	h.items[last] = entry[T]{}
	h.items = h.items[:last]
	if i != last {
		h.up(i)
		h.down(i)
	}
	x.TimerNode().Init()
}

func (h *Heap[T]) key(i int) mtime.Time { return h.items[i].key }

func (h *Heap[T]) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].x.TimerNode().index = i
	h.items[j].x.TimerNode().index = j
}

func (h *Heap[T]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h.key(p) <= h.key(i) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *Heap[T]) down(i int) {
	n := len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.key(r) < h.key(l) {
			m = r
		}
		if h.key(i) <= h.key(m) {
			return
		}
		h.swap(i, m)
		i = m
	}
}
