package sim

import (
	"math/bits"
	"slices"

	"github.com/openmrc/mrc/internal/slab"
	"github.com/openmrc/mrc/mtime"
)

// The discrete-event core: integer picosecond time, a calendar queue of
// value events ordered by (time, kind and target) with a 4-ary heap for
// far events, and pools of header-only packets addressed by handle.
// Nothing here allocates once warmed up, and the bulk of it holds no
// pointers the garbage collector must trace.

// Time is simulated time: mtime.Picos, picoseconds, as vswitch counts.
// It does not mix with the core's nanosecond mtime.Time; convert with
// Picos and Nanos.
type Time = mtime.Picos

// never is a time later than any event.
const never Time = 1<<63 - 1

type evKind uint8

const (
	evArrive      evKind = iota + 1 // the head of a link's pipe reaches the far node
	evTxDone                        // a port finished serialising a packet
	evTimer                         // a host's transport deadline
	evFlowStart                     // a flow starts
	evAction                        // a scheduled failure action
	evReconverge                    // ECMP routing reconverges
	evPFC                           // a PFC pause/resume frame reaches a sender
	evLocalRepair                   // an ECMP switch reroutes around its own link
	evTrigger                       // a trigger's delay ends: it fires
	evCredit                        // credits reach a link's sender (credit.go)
)

// event is one scheduled happening. arg packs the kind (top 8 bits), a
// 24-bit auxiliary value and a 32-bit id. Two events equal in both
// fields are twins (two equal credits, a timer armed twice): either may
// run first.
type event struct {
	at  Time
	arg uint64
}

func mkArg(k evKind, aux uint32, id int32) uint64 {
	return uint64(k)<<56 | uint64(aux&0xFFFFFF)<<32 | uint64(uint32(id))
}

func (e *event) kind() evKind { return evKind(e.arg >> 56) }
func (e *event) aux() uint32  { return uint32(e.arg>>32) & 0xFFFFFF }
func (e *event) id() int32    { return int32(uint32(e.arg)) }

// before orders events by time, then by what they are (arg: kind,
// auxiliary value, id). Two events of one time keep their order however
// they were scheduled, so a partition may process a window node by node
// (window.go) and find what time order finds.
func (a *event) before(b *event) bool {
	return a.at < b.at || a.at == b.at && a.arg < b.arg
}

// evHeap is a 4-ary min-heap of events: shallower than a binary heap and
// kinder to caches. The calendar keeps its far events in one.
type evHeap struct{ h []event }

func (q *evHeap) len() int { return len(q.h) }

func (q *evHeap) top() *event { return &q.h[0] }

func (q *evHeap) push(e event) {
	q.h = append(q.h, e)
	i := len(q.h) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !e.before(&q.h[p]) {
			break
		}
		q.h[i] = q.h[p]
		i = p
	}
	q.h[i] = e
}

func (q *evHeap) pop() event {
	top := q.h[0]
	n := len(q.h) - 1
	last := q.h[n]
	q.h = q.h[:n]
	if n == 0 {
		return top
	}
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		end := min(c+4, n)
		for j := c + 1; j < end; j++ {
			if q.h[j].before(&q.h[m]) {
				m = j
			}
		}
		if !q.h[m].before(&last) {
			break
		}
		q.h[i] = q.h[m]
		i = m
	}
	q.h[i] = last
	return top
}

// pktCap is the most header bytes a simulated packet carries: payloads
// are phantom, so this covers the largest header stack (an SRv6-
// encapsulated SACK or endpoint response is 140 bytes). smallCap is what
// a data packet's headers take (SRv6-encapsulated MRC WRITE: 120 bytes):
// the packets in flight are mostly those, so they are kept in slots of
// their own, 24 bytes smaller.
const (
	pktCap   = 144
	smallCap = 120
)

// packet is a simulated packet's record: its place in a link's pipe and
// its lengths. Its header bytes follow it in its slot (smallSlot,
// largeSlot): the pipe link comes first, beside the lengths and the first
// header bytes, so delivering the head of a pipe reads the next packet's
// handle and arrival time from the cache line the far node reads next,
// and no other packet's memory.
type packet struct {
	nextAt Time   // when next reaches the far end of the link
	next   uint32 // the next packet in the link's pipe, or nilPkt
	wl     uint16 // IP datagram length (payload included)
	n      uint8  // header bytes
}

// pktTag is who sent a packet: the sending host and its QP, for the
// counts kept per connection (traffic into failures, a job's hot links,
// the first flows' series). Only a run that keeps such counts tags its
// packets (pool.tags); the tags sit beside the slots, index for index, so
// the packets in flight, most of a large fabric's memory, do not carry
// them.
type pktTag struct {
	src int32
	qpn uint32
}

// The two sizes of packet slot.
type (
	smallSlot struct {
		packet
		data [smallCap]byte
	}
	largeSlot struct {
		packet
		data [pktCap]byte
	}
)

// Packet handles are global: the partition whose pool holds the packet
// (top bits), its slot size (largeBit) and its index among the slots of
// that size. A packet that crosses to another partition moves by handle;
// the receiver hands it back to its owner's free list between windows.
const (
	chunkBits = 10
	chunkSize = 1 << chunkBits
	leafBits  = 8 // chunks per leaf of a pool's directory: 1<<leafBits
	idxBits   = 26
	idxMask   = 1<<idxBits - 1
	largeBit  = 1 << (idxBits - 1)
	slotMask  = largeBit - 1
	maxChunks = largeBit >> chunkBits
	maxShards = 1 << (32 - idxBits)
	nilPkt    = ^uint32(0)
)

// slots hands out slots of one size by index, from chunks that never
// move once allocated (the pool recycles them). The chunks hang off a
// two-level directory allocated as it grows: a partition that never
// sends holds none, a small run one chunk of 1,024. Other partitions read the slots
// of packets they were handed; a directory entry is written once, before
// any packet it leads to is handed out, and never moves, so that is safe
// between barriers.
type slots[S any] struct {
	dir  [maxChunks >> leafBits]*[1 << leafBits]*[chunkSize]S
	used uint32 // slots handed out so far
}

func (p *slots[S]) at(i uint32) *S {
	c := i >> chunkBits
	return &p.dir[c>>leafBits][c&(1<<leafBits-1)][i&(chunkSize-1)]
}

// fresh hands out a slot never handed out before.
func (p *slots[S]) fresh() (uint32, bool) {
	if p.used == maxChunks*chunkSize {
		return 0, false
	}
	p.chunk(p.used)
	p.used++
	return p.used - 1, true
}

// chunk allocates the chunk holding slot i, if it is not yet.
func (p *slots[S]) chunk(i uint32) {
	c := i >> chunkBits
	leaf := p.dir[c>>leafBits]
	if leaf == nil {
		leaf = new([1 << leafBits]*[chunkSize]S)
		p.dir[c>>leafBits] = leaf
	}
	if leaf[c&(1<<leafBits-1)] == nil {
		leaf[c&(1<<leafBits-1)] = new([chunkSize]S)
	}
}

// pool is a partition's packets: slots of two sizes, and their tags in a
// run that tags packets (nil otherwise): tags[0] the small slots',
// tags[1] the large ones'. The slots given back wait on a stack per size
// (free[0], free[1]: the latest given back first, or nilPkt), linked
// through their packet.next: recycling takes no memory of its own.
type pool struct {
	id    uint32
	small slots[smallSlot]
	large slots[largeSlot]
	free  [2]uint32
	tags  *[2]slots[pktTag]
}

// newPool returns partition id's pool, tagging its packets if tagged.
func newPool(id int, tagged bool) *pool {
	p := &pool{id: uint32(id), free: [2]uint32{nilPkt, nilPkt}}
	if tagged {
		p.tags = new([2]slots[pktTag])
	}
	return p
}

// at returns the packet with index i (a handle's low idxBits) and its
// header room.
func (p *pool) at(i uint32) (*packet, []byte) {
	if i&largeBit != 0 {
		s := p.large.at(i & slotMask)
		return &s.packet, s.data[:]
	}
	s := p.small.at(i)
	return &s.packet, s.data[:]
}

// alloc hands out a packet with room for n header bytes.
func (p *pool) alloc(n int) (uint32, bool) {
	k := 0
	if n > smallCap {
		k = 1
	}
	if i := p.free[k]; i != nilPkt {
		pk, _ := p.at(i)
		p.free[k] = pk.next
		return p.id<<idxBits | i, true
	}
	var i uint32
	var ok bool
	if k == 0 {
		i, ok = p.small.fresh()
	} else if i, ok = p.large.fresh(); ok {
		i |= largeBit
	}
	if !ok {
		return nilPkt, false
	}
	if p.tags != nil {
		p.tags[k].chunk(i & slotMask)
	}
	return p.id<<idxBits | i, true
}

// tag returns the tag of the packet with index i; the pool must tag its
// packets.
func (p *pool) tag(i uint32) *pktTag { return p.tags[i>>(idxBits-1)].at(i & slotMask) }

// put takes back packet h, one of the pool's.
func (p *pool) put(h uint32) {
	i := h & idxMask
	pk, _ := p.at(i)
	k := i >> (idxBits - 1)
	pk.next, p.free[k] = p.free[k], i
}

// xmsg carries a packet (by handle), a PFC frame or a credit return
// across a partition boundary; it is merged into the receiving partition
// at the end of the window.
type xmsg struct {
	at Time
	dl int32  // directed link (packet: arrives over it; PFC: pauses its sender); ^dl: credits for dl's sender
	h  uint32 // packet handle, or xPause, xResume, xTrigger, xRecv; credits: lane<<31 | bytes
}

// PFC frames in xmsg.h and evPFC's aux; a trigger's activation (dl is
// the trigger) and a flow's receives to post (dl is the flow) in xmsg.h.
const (
	xPause   = nilPkt - 1
	xResume  = nilPkt - 2
	xTrigger = nilPkt - 3
	xRecv    = nilPkt - 4
)

// calendar is the event queue of a partition: a ring of buckets of
// 2^calBits picoseconds covering the next calSize buckets, and a heap for
// events beyond the ring. Events cluster a few microseconds ahead of now
// (serialisation and propagation), so most pushes are an append and most
// pops read memory in order. A bucket is a chain of fixed blocks of
// events in push order, from a pool the whole ring shares: its memory
// follows the events pending, however they crowd into buckets (a large
// fabric puts thousands in one 4 ns bucket, an incast one or none). When
// the clock reaches a bucket, its events move to one array, sorted by
// event.before, from which they are consumed; an event pushed into
// that bucket meanwhile is inserted in order. A bitmap of the slots
// holding events lets the clock jump over empty buckets: a quiet stretch
// (an incast's idle links) costs a few word tests, not a visit to every
// bucket.
type calendar struct {
	first, last [calSize]int32       // each slot's chain of blocks, or noBlock
	busy        [calSize / 64]uint64 // slot i holds events (consumed or not): bit i
	cur         int64                // lowest bucket that may hold events
	n           int                  // events in the ring
	far         evHeap
	blocks      slab.Pool[block, *block]

	// The bucket cur once the clock reached it (loaded): its events
	// sorted, the first head of them consumed.
	loaded bool
	now    []event
	head   int
	spare  []event  // sortEvents' scratch
	ties   []uint64 // sortEvents' scratch for a long run of one time
}

const (
	calBits = 12 // 4.1 ns buckets
	calSize = 1 << 11
	calMask = calSize - 1
	// calSortMin is the bucket size from which a bucket is sorted by
	// radix rather than by insertion: a bucket filled at a large
	// fabric's rate holds thousands of events in no particular order.
	calSortMin = 48
)

// bucketOf returns the bucket number holding time t.
func bucketOf(t Time) int64 { return int64(t >> calBits) }

// bucketStart returns the first time in bucket b.
func bucketStart(b int64) Time { return Time(b) << calBits }

func newCalendar() *calendar {
	c := new(calendar)
	for i := range c.first {
		c.first[i], c.last[i] = noBlock, noBlock
	}
	return c
}

func (c *calendar) push(e event) {
	b := bucketOf(e.at)
	if b >= c.cur+calSize {
		c.far.push(e)
		return
	}
	if b < c.cur {
		b = c.cur // cannot happen: events are never scheduled in the past
	}
	i := b & calMask
	c.n++
	c.busy[i>>6] |= 1 << (i & 63)
	if c.loaded && b == c.cur {
		// The bucket is being consumed: insert in order after its head.
		c.now = slab.Push(c.now, event{})
		j := len(c.now) - 1
		for j > c.head && e.before(&c.now[j-1]) {
			c.now[j] = c.now[j-1]
			j--
		}
		c.now[j] = e
		return
	}
	var bl *block
	if l := c.last[i]; l == noBlock {
		nb := c.blocks.Alloc()
		c.first[i], c.last[i] = nb, nb
		bl = c.blocks.At(nb)
	} else if bl = c.blocks.At(l); bl.n == blockLen {
		nb := c.blocks.Alloc()
		bl.next, c.last[i] = nb, nb
		bl = c.blocks.At(nb)
	}
	bl.ev[bl.n] = e
	bl.n++
}

// load moves the events of slot i, the bucket cur, into now, sorted, and
// frees its blocks.
func (c *calendar) load(i int64) {
	c.now, c.head, c.loaded = c.now[:0], 0, true
	for b := c.first[i]; b != noBlock; {
		bl := c.blocks.At(b)
		if len(c.now)+blockLen > cap(c.now) {
			c.now = slices.Grow(c.now, max(blockLen, cap(c.now))) // doubling: see slab.Push
		}
		c.now = append(c.now, bl.ev[:bl.n]...)
		next := bl.next
		c.blocks.Release(b)
		b = next
	}
	c.first[i], c.last[i] = noBlock, noBlock
	c.spare = sortEvents(c.now, c.spare, &c.ties)
}

// peek returns the next event of the bucket being consumed, or nil when
// there is none left (then advance finds the next bucket): what advance
// returns in the common case, small enough to be inlined.
func (c *calendar) peek() *event {
	if c.loaded && c.head < len(c.now) {
		return &c.now[c.head]
	}
	return nil
}

// advance moves cur to the first bucket holding events, but not to a
// bucket that starts at or after limit, and returns that bucket's next
// event, or nil.
func (c *calendar) advance(limit Time) *event {
	for {
		if c.n == 0 {
			if c.far.len() == 0 {
				return nil
			}
			// Jump over the empty ring to the far events.
			fb := bucketOf(c.far.top().at)
			if bucketStart(fb) >= limit {
				return nil
			}
			c.leave(max(c.cur, fb))
			c.migrate()
			continue
		}
		i := c.cur & calMask
		if !c.loaded && c.first[i] != noBlock {
			c.load(i)
		}
		if c.loaded && c.head < len(c.now) {
			return &c.now[c.head]
		}
		if bucketStart(c.cur+1) > limit {
			return nil
		}
		c.busy[i>>6] &^= 1 << (i & 63)
		// Jump to the next bucket holding events, but not past the last
		// bucket starting at or before limit. Far events all lie beyond
		// the ring, so none falls between.
		next := c.nextBusy(c.cur + 1)
		if next < 0 {
			next = c.cur + 1 // cannot happen: the ring holds c.n > 0 events
		}
		c.leave(min(next, bucketOf(limit)))
		c.migrate()
	}
}

// unload puts the events left in the bucket being consumed back into its
// chain of blocks, to be sorted again when the clock reaches it: pushes
// into it are then appended, not inserted in order. A window run node by
// node pushes in no time order, into the bucket its end falls in.
func (c *calendar) unload() {
	if !c.loaded {
		return
	}
	rest := c.now[c.head:]
	c.loaded, c.n = false, c.n-len(rest)
	for _, e := range rest {
		c.push(e)
	}
	c.now, c.head = c.now[:0], 0
}

// leave moves the clock from bucket cur, consumed, to bucket b.
func (c *calendar) leave(b int64) {
	if b != c.cur {
		c.cur, c.loaded = b, false
	}
}

// nextBusy returns the first bucket from b on, inside the ring, whose
// slot holds events, or -1.
func (c *calendar) nextBusy(b int64) int64 {
	end := c.cur + calSize
	for b < end {
		i := b & calMask
		if w := c.busy[i>>6] >> (i & 63); w != 0 {
			if nb := b + int64(bits.TrailingZeros64(w)); nb < end {
				return nb
			}
			return -1
		}
		b += 64 - i&63
	}
	return -1
}

// migrate moves far events that now fall inside the ring into it.
func (c *calendar) migrate() {
	for c.far.len() > 0 && bucketOf(c.far.top().at) < c.cur+calSize {
		c.push(c.far.pop())
	}
}

// pop removes the event advance returned.
func (c *calendar) pop() event {
	e := c.now[c.head]
	c.head++
	c.n--
	return e
}

// min returns the earliest event's time without moving the ring, or never.
func (c *calendar) min() Time {
	t := never
	if c.far.len() > 0 {
		t = c.far.top().at
	}
	if c.n == 0 {
		return t
	}
	for b := c.nextBusy(c.cur); b >= 0; b = c.nextBusy(b + 1) {
		if b == c.cur && c.loaded {
			if c.head < len(c.now) {
				return min(t, c.now[c.head].at)
			}
			continue
		}
		i := b & calMask
		if c.first[i] == noBlock {
			continue
		}
		for k := c.first[i]; k != noBlock; k = c.blocks.At(k).next {
			bl := c.blocks.At(k)
			for j := range bl.n {
				t = min(t, bl.ev[j].at)
			}
		}
		return t
	}
	return t
}

// blockLen is the events in one block of a bucket's chain.
const blockLen = 16

// noBlock ends a chain of blocks.
const noBlock int32 = -1

// block is a link of a bucket's chain of events. Its count comes first,
// in the cache line of its first events: a bucket of a few events costs
// one line.
type block struct {
	n    int32 // events held
	next int32 // the next block of the chain, or noBlock
	ev   [blockLen]event
}

// Reset empties b for slab.Pool.
func (b *block) Reset() { b.n, b.next = 0, noBlock }

// sortEvents sorts a bucket by event.before, with tmp as scratch of at
// least len(bk) events for a large bucket, and returns tmp. A large
// bucket is put in time order by a stable radix sort on the bits of the
// time inside the bucket, then each run of one time is sorted; a small
// one by insertion. Only twins are equal, so the result is the one order.
// ties is scratch for the longest runs (sortTies).
func sortEvents(bk, tmp []event, ties *[]uint64) []event {
	if len(bk) < calSortMin {
		insertionSort(bk)
		return tmp
	}
	tmp = slices.Grow(tmp[:0], len(bk))[:len(bk)]
	radixByTime(bk, tmp)
	for i := 0; i < len(bk); {
		j := i + 1
		for j < len(bk) && bk[j].at == bk[i].at {
			j++
		}
		switch {
		case j-i > 64: // a symmetric fabric's burst
			sortTies(bk[i:j], ties)
		case j-i > 1:
			insertionSort(bk[i:j])
		}
		i = j
	}
	return tmp
}

// sortTies sorts run, events of one time, by arg: since they share the
// time, it sorts their args alone, as plain integers (no comparison
// function), through args.
func sortTies(run []event, args *[]uint64) {
	a := (*args)[:0]
	for _, e := range run {
		a = append(a, e.arg)
	}
	slices.Sort(a)
	for k := range run {
		run[k].arg = a[k]
	}
	*args = a
}

// insertionSort sorts bk by event.before: quick on the few events of a
// small bucket or of one time.
func insertionSort(bk []event) {
	for i := 1; i < len(bk); i++ {
		e := bk[i]
		j := i
		for j > 0 && e.before(&bk[j-1]) {
			bk[j] = bk[j-1]
			j--
		}
		bk[j] = e
	}
}

// radixByTime sorts bk, whose events all lie in one bucket, by time
// (stable), in two counting passes over the time's low calBits bits,
// through tmp (len(bk) events).
func radixByTime(bk, tmp []event) {
	const half = (calBits + 1) / 2
	const mask = 1<<half - 1
	var lo, hi [1 << half]int32
	for i := range bk {
		k := uint32(bk[i].at)
		lo[k&mask]++
		hi[k>>half&mask]++
	}
	var sl, sh int32
	for d := range lo {
		lo[d], sl = sl, sl+lo[d]
		hi[d], sh = sh, sh+hi[d]
	}
	for i := range bk {
		d := uint32(bk[i].at) & mask
		tmp[lo[d]] = bk[i]
		lo[d]++
	}
	for i := range tmp {
		d := uint32(tmp[i].at) >> half & mask
		bk[hi[d]] = tmp[i]
		hi[d]++
	}
}
