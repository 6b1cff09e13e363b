package vswitch

import (
	"github.com/openmrc/mrc/internal/slab"
	"github.com/openmrc/mrc/mtime"
)

// entry is a queued packet.
type entry struct {
	h  Handle
	wl uint32
	in int32
	at mtime.Picos
}

// fifo is a FIFO of entries kept in a chain of blocks from its switch's
// pool. A port's queues take memory only while they hold packets, and
// the switch's ports and queues hold no pointers: a simulated fabric has
// millions of ports, most of them idle at any time.
type fifo struct {
	first, last int32 // the chain's ends, or noBlock
	head        int32 // the oldest entry's index in first
	n           int32 // entries queued
}

// fifoBlock is the entries in one block.
const fifoBlock = 4

// noBlock ends a chain of blocks.
const noBlock int32 = -1

// qblock is a link of a fifo's chain.
type qblock struct {
	e    [fifoBlock]entry
	n    int32 // entries written
	next int32 // the next block of the chain, or noBlock
}

func (f *fifo) push(p *blockPool, e entry) {
	if f.n == 0 {
		f.first = p.Alloc()
		f.last, f.head = f.first, 0
	} else if p.At(f.last).n == fifoBlock {
		b := p.Alloc()
		p.At(f.last).next = b
		f.last = b
	}
	bl := p.At(f.last)
	bl.e[bl.n] = e
	bl.n++
	f.n++
}

// peek returns the oldest entry; the fifo must not be empty.
func (f *fifo) peek(p *blockPool) *entry { return &p.At(f.first).e[f.head] }

// pop removes and returns the oldest entry; the fifo must not be empty.
func (f *fifo) pop(p *blockPool) entry {
	bl := p.At(f.first)
	e := bl.e[f.head]
	f.head++
	f.n--
	switch {
	case f.n == 0:
		p.Release(f.first)
		f.first, f.last, f.head = noBlock, noBlock, 0
	case f.head == fifoBlock:
		next := bl.next
		p.Release(f.first)
		f.first, f.head = next, 0
	}
	return e
}

// blockPool is a switch's pool of queue blocks.
type blockPool = slab.Pool[qblock, *qblock]

// Reset empties b for slab.Pool.
func (b *qblock) Reset() { b.n, b.next = 0, noBlock }
