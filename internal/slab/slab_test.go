package slab

import "testing"

type blk struct {
	v     [3]int
	reset int
}

func (b *blk) Reset() { b.v, b.reset = [3]int{}, b.reset+1 }

// TestPool: blocks keep their index across chunks, a released block is
// the next handed out (reset), and a block's address never moves while
// the pool grows.
func TestPool(t *testing.T) {
	var p Pool[blk, *blk]
	first := p.At(p.Alloc())
	first.v[0] = 7
	for i := int32(1); i < 3*ChunkLen; i++ {
		if got := p.Alloc(); got != i {
			t.Fatalf("alloc %d handed out %d", i, got)
		}
		p.At(i).v[0] = int(i)
	}
	if p.At(0) != first || first.v[0] != 7 {
		t.Fatalf("block 0 moved or changed as the pool grew")
	}
	p.Release(5)
	p.Release(20)
	if n := p.InUse(); n != 3*ChunkLen-2 {
		t.Fatalf("%d blocks in use, want %d", n, 3*ChunkLen-2)
	}
	if got := p.Alloc(); got != 20 {
		t.Fatalf("alloc after releasing 5, 20 handed out %d, want 20", got)
	}
	if b := p.At(20); b.v[0] != 0 || b.reset != 2 {
		t.Fatalf("reused block not reset: %+v", *b)
	}
	if got := p.Alloc(); got != 5 {
		t.Fatalf("handed out %d, want 5", got)
	}
	if got := p.Alloc(); got != 3*ChunkLen {
		t.Fatalf("handed out %d, want a new block %d", got, 3*ChunkLen)
	}
}

// TestPush: Push appends, doubling the capacity when full.
func TestPush(t *testing.T) {
	var s []int
	for i := range 100 {
		s = Push(s, i)
		if s[i] != i || len(s) != i+1 {
			t.Fatalf("after %d pushes: %v", i+1, s)
		}
	}
	if cap(s) != 128 {
		t.Fatalf("capacity %d after 100 pushes from empty, want 16 doubled to 128", cap(s))
	}
}
