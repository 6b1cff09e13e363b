package vswitch

import (
	"github.com/openmrc/mrc/internal/slab"
	"github.com/openmrc/mrc/mtime"
)

// entry is a queued packet, as push takes it and pop returns it.
type entry struct {
	h  Handle
	wl uint32
	in int32 // the ingress port, or -1
	at mtime.Picos
}

// stored is an entry in a block, without its ingress port: 16 bytes
// where an entry takes 24.
type stored struct {
	h  Handle
	wl uint32
	at mtime.Picos
}

// inPort packs an ingress port into 16 bits: a switch has at most 65,535
// ports (0..65534), so in+1 fits, with 0 for -1 (none) and for any value
// that is not a port.
func inPort(in int32) uint16 {
	if u := uint32(in) + 1; u <= 0xffff {
		return uint16(u)
	}
	return 0
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

// qblock is a link of a fifo's chain: 80 bytes, the ingress ports
// packed beside the entries (the pool holds millions at the peak of a
// large fabric's run).
type qblock struct {
	e    [fifoBlock]stored
	in   [fifoBlock]uint16 // inPort of each entry
	n    int32             // entries written
	next int32             // the next block of the chain, or noBlock
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
	bl.e[bl.n] = stored{h: e.h, wl: e.wl, at: e.at}
	bl.in[bl.n] = inPort(e.in)
	bl.n++
	f.n++
}

// peekLen returns the oldest entry's wire length; the fifo must not be
// empty.
func (f *fifo) peekLen(p *blockPool) uint32 { return p.At(f.first).e[f.head].wl }

// pop removes and returns the oldest entry; the fifo must not be empty.
func (f *fifo) pop(p *blockPool) entry {
	bl := p.At(f.first)
	st := &bl.e[f.head]
	e := entry{h: st.h, wl: st.wl, in: int32(bl.in[f.head]) - 1, at: st.at}
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
