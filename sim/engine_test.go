package sim

import (
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestRecordSizes guards the records a large run holds millions of: the
// packets in flight (about 160 per host on --preset big, nearly all of
// them data packets, in small slots) and the directed links (32 per
// host: a description and sending and receiving ends; a lossy link's
// loss is kept apart), and the events pending and of a window run node
// by node (a few per host and link).
func TestRecordSizes(t *testing.T) {
	if n, m := unsafe.Sizeof(smallSlot{}), unsafe.Sizeof(largeSlot{}); n != 136 || m != 160 {
		t.Errorf("packet slots take %d and %d bytes, want 136 and 160", n, m)
	}
	if a, b, c := unsafe.Sizeof(linkInfo{}), unsafe.Sizeof(linkTx{}), unsafe.Sizeof(linkRx{}); a != 32 || b != 24 || c != 24 {
		t.Errorf("linkInfo, linkTx, linkRx take %d, %d, %d bytes; want 32, 24, 24", a, b, c)
	}
	if e, n := unsafe.Sizeof(event{}), unsafe.Sizeof(nodeEvent{}); e != 16 || n != 24 {
		t.Errorf("event and nodeEvent take %d and %d bytes, want 16 and 24", e, n)
	}
}

// TestPoolSizes: a pool hands out slots with room for the headers asked
// for, and a tag of their own, never the same slot twice while it is in
// use, and reuses the slots it is given back.
func TestPoolSizes(t *testing.T) {
	p := newPool(3, true)
	seen := map[uint32]bool{}
	var hs []uint32
	for i := range 5000 {
		n := []int{40, smallCap, smallCap + 1, pktCap}[i%4]
		h, ok := p.alloc(n)
		if !ok || seen[h] || h>>idxBits != 3 {
			t.Fatalf("alloc %d: handle %#x ok %v (seen %v)", i, h, ok, seen[h])
		}
		seen[h] = true
		pk, hdr := p.at(h & idxMask)
		if len(hdr) < n {
			t.Fatalf("alloc(%d): %d bytes of room", n, len(hdr))
		}
		pk.n = uint8(i)
		hdr[n-1] = byte(i)
		*p.tag(h & idxMask) = pktTag{src: int32(i), qpn: uint32(i) << 8}
		hs = append(hs, h)
	}
	for i, h := range hs { // nothing overwrote another packet or its tag
		pk, hdr := p.at(h & idxMask)
		if n := []int{40, smallCap, smallCap + 1, pktCap}[i%4]; pk.n != uint8(i) || hdr[n-1] != byte(i) {
			t.Fatalf("packet %d changed: n %d, last header byte %d", i, pk.n, hdr[n-1])
		}
		if tg := *p.tag(h & idxMask); tg != (pktTag{src: int32(i), qpn: uint32(i) << 8}) {
			t.Fatalf("packet %d's tag changed: %+v", i, tg)
		}
	}
	for _, h := range hs {
		p.put(h)
	}
	used := p.small.used + p.large.used
	for i := range 5000 {
		if h, _ := p.alloc([]int{40, pktCap}[i%2]); !seen[h] {
			t.Fatalf("alloc after put: new handle %#x", h)
		}
	}
	if p.small.used+p.large.used != used {
		t.Fatal("the pool grew instead of reusing its slots")
	}
}

// The calendar hands out events in event.before order, never one
// at or after a window's end, and min is the earliest pending event's
// time, whatever the mix of ties, sparse stretches (its jumps over empty
// buckets), far events (its heap), bursts into one bucket (its chains
// of blocks and large buckets' sort) and buckets given back unconsumed
// (unload): checked against a plain list over many seeds. Drained, it
// holds no block.
func TestCalendarOrder(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		c := newCalendar()
		var ref []event
		push := func(at Time) {
			// Few distinct args: ties of time are ordered by arg,
			// whatever the order of their pushes; twins (equal time
			// and arg) are interchangeable.
			e := event{at: at, arg: rng.Uint64N(16)}
			c.push(e)
			ref = append(ref, e)
		}
		delay := func() Time {
			switch rng.IntN(4) {
			case 0:
				return 0 // a tie
			case 1:
				return Time(rng.Int64N(1 << calBits)) // same or next bucket
			case 2:
				return Time(rng.Int64N(calSize << calBits)) // inside the ring
			default:
				return Time(rng.Int64N(4 * calSize << calBits)) // often beyond it
			}
		}
		refMin := func() int {
			m := -1
			for i := range ref {
				if m < 0 || ref[i].before(&ref[m]) {
					m = i
				}
			}
			return m
		}
		// burst pushes up to 300 events into one bucket, in no order,
		// or all of one time (a symmetric fabric's burst); a few per
		// seed.
		bursts := 4
		burst := func(now Time) {
			b := now + Time(rng.Int64N(calSize<<calBits))
			spread := int64(1 << calBits)
			if rng.IntN(2) == 0 {
				spread = 1
			}
			for range rng.IntN(300) {
				push(b + Time(rng.Int64N(spread)))
			}
		}
		for range 1 + rng.IntN(50) {
			push(delay())
		}
		var now, end Time
		for range 300 {
			end += 1 + Time(rng.Int64N(20<<calBits))
			for {
				top := c.advance(end)
				if top == nil || top.at >= end {
					break
				}
				e := c.pop()
				m := refMin()
				if m < 0 || e != ref[m] {
					t.Fatalf("seed %d: popped %+v, want %+v", seed, e, ref[max(m, 0)])
				}
				ref = append(ref[:m], ref[m+1:]...)
				now = e.at
				for range rng.IntN(3) {
					push(now + delay())
				}
				if bursts > 0 && rng.IntN(40) == 0 {
					bursts--
					burst(now)
				}
			}
			if m := refMin(); m >= 0 && ref[m].at < end {
				t.Fatalf("seed %d: window ending %d left %+v", seed, end, ref[m])
			}
			// A window run node by node gives its bucket back.
			if rng.IntN(2) == 0 {
				c.unload()
			}
			// Messages from other partitions arrive at or after end.
			for range rng.IntN(3) {
				push(end + delay())
			}
			want := never
			if m := refMin(); m >= 0 {
				want = ref[m].at
			}
			if got := c.min(); got != want {
				t.Fatalf("seed %d: min %d, want %d", seed, got, want)
			}
		}
		// Drained, the calendar holds no block.
		for c.advance(never) != nil {
			c.pop()
		}
		if held := c.blocks.InUse(); held != 0 || c.n != 0 {
			t.Fatalf("seed %d: drained, the calendar holds %d blocks and counts %d events", seed, held, c.n)
		}
	}
}

// radixByTime alone puts a bucket in time order and keeps the input
// order of ties: sortEvents' insertion pass then has nothing to move.
func TestRadixByTimeIsStable(t *testing.T) {
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 11))
		base := Time(rng.Int64N(1<<40)) &^ (1<<calBits - 1)
		spread := Time(1) << rng.IntN(calBits+1) // from all ties to the whole bucket
		bk := make([]event, calSortMin+rng.IntN(2000))
		for i := range bk {
			bk[i] = event{at: base + Time(rng.Int64N(int64(spread))), arg: uint64(i)}
		}
		radixByTime(bk, make([]event, len(bk)))
		for i := 1; i < len(bk); i++ {
			if !bk[i-1].before(&bk[i]) {
				t.Fatalf("seed %d: %+v sorted before %+v", seed, bk[i-1], bk[i])
			}
		}
	}
}
