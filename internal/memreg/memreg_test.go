package memreg

import (
	"math/rand/v2"
	"testing"
)

func TestRegisterLookupDeregister(t *testing.T) {
	var tab Table
	a, err := tab.Register(100, make([]byte, 100), 0, true, 7)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := tab.Register(1<<20, nil, 1, false, 9)
	if a.Addr+a.Len > b.Addr {
		t.Fatalf("regions overlap: %+v %+v", a, b)
	}
	if r := tab.Lookup(a.Key); r == nil || r.Addr != a.Addr || r.Buf == nil {
		t.Fatalf("lookup of a: %+v", r)
	}
	if tab.Lookup(a.Key^1) != nil {
		t.Fatal("a key with the wrong tag was accepted")
	}
	if !tab.Deregister(a.Key) || tab.Lookup(a.Key) != nil || tab.Deregister(a.Key) {
		t.Fatal("deregistration")
	}
	c, _ := tab.Register(10, nil, 0, true, 7)
	if c.Key>>TagBits != a.Key>>TagBits || c.Key == a.Key {
		t.Fatalf("a freed slot is reused with a new key: %#x after %#x", c.Key, a.Key)
	}
	if _, err := tab.Register(MaxLen+1, nil, 0, false, 0); err != ErrTooLarge {
		t.Fatalf("oversized region: %v", err)
	}
}

// TestAccess checks protection domains and the remote-write flag, and that
// every tag bit of a key counts.
func TestAccess(t *testing.T) {
	var tab Table
	w, _ := tab.Register(100, make([]byte, 100), 1, true, 0xabcde)
	l, _ := tab.Register(100, make([]byte, 100), 1, false, 0x12345)
	if r := tab.Lookup(w.Key); !r.Writable(1) || r.Writable(0) || r.Writable(2) {
		t.Fatal("a remotely writable region must be writable from its own PD only")
	}
	if r := tab.Lookup(l.Key); r.Writable(1) || r.Writable(0) {
		t.Fatal("a local-only region must not be remotely writable")
	}
	for bit := range TagBits {
		if tab.Lookup(w.Key^1<<bit) != nil {
			t.Fatalf("a key differing in tag bit %d was accepted", bit)
		}
	}
}

// TestSpanAgainstModel checks the bounds check against 128-bit arithmetic
// on random (va, n), including values that overflow 64 bits.
func TestSpanAgainstModel(t *testing.T) {
	r := Region{Addr: 1 << 40, Len: 5000}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		va := r.Addr + uint64(rnd.IntN(12000)) - 6000
		n := uint64(rnd.IntN(12000))
		if rnd.IntN(10) == 0 {
			n = ^uint64(0) - uint64(rnd.IntN(10))
		}
		// [va, va+n) inside [Addr, Addr+Len), computed without overflow.
		want := va >= r.Addr && va-r.Addr <= r.Len && n <= r.Len-(va-r.Addr)
		off, ok := r.Span(va, n)
		if ok != want || ok && off != va-r.Addr {
			t.Fatalf("Span(%#x, %d) = %d, %v; want %v", va, n, off, ok, want)
		}
	}
}
