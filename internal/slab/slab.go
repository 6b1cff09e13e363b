// Package slab allocates in large steps for structures that grow to
// millions of entries: pools of blocks handed out by index from chunks
// that never move, and slices that double.
package slab

// Pool hands out blocks of type B by index from chunks that never move,
// and takes them back for reuse. Indices are int32, so a structure that
// links its blocks by index holds no pointers. A block handed out is
// Reset, not zeroed. The zero value is an empty pool; it is not safe for
// concurrent use.
type Pool[B any, PB interface {
	*B
	Reset()
}] struct {
	chunks [][]B
	used   int32 // blocks handed out so far
	free   []int32
}

// ChunkLen is the blocks per chunk: a pool that never allocates holds
// none, a quiet one a single chunk.
const ChunkLen = 16

// At returns block i, which must have been handed out by Alloc.
func (p *Pool[B, PB]) At(i int32) *B {
	u := uint32(i) // a shift and a mask, where int32 division needs sign fixes
	return &p.chunks[u/ChunkLen][u%ChunkLen]
}

// Alloc hands out a Reset block: the latest Released if there is one,
// else a new one.
func (p *Pool[B, PB]) Alloc() int32 {
	var i int32
	if n := len(p.free); n > 0 {
		i = p.free[n-1]
		p.free = p.free[:n-1]
	} else {
		if int(p.used/ChunkLen) == len(p.chunks) {
			p.chunks = append(p.chunks, make([]B, ChunkLen))
		}
		i = p.used
		p.used++
	}
	PB(p.At(i)).Reset()
	return i
}

// InUse returns the number of blocks handed out and not released.
func (p *Pool[B, PB]) InUse() int { return int(p.used) - len(p.free) }

// Release takes block i back for reuse.
func (p *Pool[B, PB]) Release(i int32) { p.free = Push(p.free, i) }

// Push appends v to s, doubling s's capacity when it is full. append
// grows a large slice by about a quarter at a time, which leaves about
// four times its final size as garbage: buffers and free lists that grow
// to millions of entries would leave that much while the heap is at its
// peak.
func Push[T any](s []T, v T) []T {
	if len(s) == cap(s) {
		ns := make([]T, len(s), max(2*cap(s), 16))
		copy(ns, s)
		s = ns
	}
	return append(s, v)
}
