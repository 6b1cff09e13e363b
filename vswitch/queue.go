package vswitch

import (
	"fmt"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/wire"
)

// DropCause says why a switch (or, in the simulator, a link) discarded a
// packet.
type DropCause uint8

const (
	DropNone       DropCause = iota
	DropMalformed            // not an IPv6 packet, or headers cut short
	DropHopLimit             // hop limit exhausted
	DropNoRoute              // no route for the destination
	DropBlackhole            // silent dataplane failure
	DropLinkDown             // the egress port (or the link) is down
	DropQueueFull            // tail drop: the data queue is full (and trimming off or impossible)
	DropHeaderFull           // the header queue is full
	DropLossy                // random loss on a lossy link (simulator)
	NumDropCauses
)

var dropNames = [NumDropCauses]string{"none", "malformed", "hop_limit", "no_route", "blackhole",
	"link_down", "queue_full", "header_queue_full", "lossy_link"}

func (c DropCause) String() string {
	if c < NumDropCauses {
		return dropNames[c]
	}
	return fmt.Sprintf("DropCause(%d)", uint8(c))
}

// Counters are a switch's totals. They only grow.
type Counters struct {
	Received       uint64 // packets given to Forward
	Enqueued       uint64 // packets accepted by Enqueue (trimmed ones included)
	Sent           uint64 // packets returned by Dequeue
	SentBytes      uint64 // their wire bytes
	Trimmed        uint64 // data packets trimmed mid-fabric
	TrimmedLastHop uint64 // data packets trimmed on LastHop ports
	Marked         uint64 // CE marks set
	Pauses         uint64 // PFC pause requests (lossless)
	Resumes        uint64 // PFC resume requests
	Drops          [NumDropCauses]uint64
}

// Dropped returns the total of all drops.
func (c *Counters) Dropped() uint64 {
	var n uint64
	for _, d := range c.Drops {
		n += d
	}
	return n
}

// Add accumulates o into c.
func (c *Counters) Add(o *Counters) {
	c.Received += o.Received
	c.Enqueued += o.Enqueued
	c.Sent += o.Sent
	c.SentBytes += o.SentBytes
	c.Trimmed += o.Trimmed
	c.TrimmedLastHop += o.TrimmedLastHop
	c.Marked += o.Marked
	c.Pauses += o.Pauses
	c.Resumes += o.Resumes
	for i := range c.Drops {
		c.Drops[i] += o.Drops[i]
	}
}

// PortCounters are one port's totals. They only grow, except that
// MaxBytes is a high-water mark.
type PortCounters struct {
	Sent      uint64 // packets dequeued
	SentBytes uint64 // wire bytes dequeued
	Trimmed   uint64 // packets trimmed on enqueue (either DSCP)
	Marked    uint64 // CE marks set
	Dropped   uint64 // packets dropped on enqueue (any cause)
	MaxBytes  int64  // most bytes queued at once (both queues)
}

// port is one port's queues and state: 64 bytes, a large fabric having
// millions. Its counters but MaxBytes are in Switch.pcount.
type port struct {
	data, hdr fifo
	dataBytes int
	hdrBytes  int
	maxBytes  int64  // PortCounters.MaxBytes
	cfg       uint16 // index into Switch.qcfgs
	up        bool
	paused    bool // PFC: the downstream asked this port to stop data
}

// portCount is a port's PortCounters but MaxBytes.
type portCount struct {
	sent, sentBytes, trimmed, marked, dropped uint64
}

// counts returns port p's counters to add to: with NoPortCounters, a
// place nothing reads.
func (s *Switch) counts(p int) *portCount {
	if s.pcount == nil {
		return &s.uncounted
	}
	return &s.pcount[p]
}

// Verdict is what Enqueue did with a packet.
type Verdict struct {
	// Drop is DropNone when the packet was queued; otherwise it was
	// discarded and the caller frees it.
	Drop DropCause
	// Trimmed says the packet was cut to its headers; Len and WireLen
	// are its new lengths.
	Trimmed bool
	Len     int
	WireLen int
	// Marked says a CE mark was set.
	Marked bool
	// Pause says the ingress port the packet came from went over the
	// PFC XOFF threshold: the caller tells that port's peer to pause.
	Pause bool
}

// Dequeued is a packet Dequeue took off a port.
type Dequeued struct {
	Handle  Handle
	WireLen int
	// Sojourn is how long the packet was queued (now − enqueue time).
	Sojourn mtime.Picos
	// Resume is the ingress port whose pause may be lifted (its queued
	// bytes fell below PFC XON), or -1.
	Resume int
	// In and VL are the ingress port the packet came in on and the lane
	// it was queued on, set when the switch has credit-limited ports
	// (QueueConfig.Credits): the caller returns CreditBytes(WireLen) of
	// credit on VL to the sender on port In's link.
	In, VL int
}

// SetPortUp takes port p down or up. A down port drops what is offered
// to it; Flush empties its queues.
func (s *Switch) SetPortUp(p int, up bool) { s.ports[p].up = up }

// PortUp reports whether port p is up.
func (s *Switch) PortUp(p int) bool { return s.ports[p].up }

// SetPaused pauses (PFC XOFF received from the peer) or resumes port p's
// data queue; the header queue is never paused.
func (s *Switch) SetPaused(p int, paused bool) { s.ports[p].paused = paused }

// PortCounters returns port p's counters: only MaxBytes with
// Config.NoPortCounters.
func (s *Switch) PortCounters(p int) PortCounters {
	c := PortCounters{MaxBytes: s.ports[p].maxBytes}
	if s.pcount != nil {
		pc := &s.pcount[p]
		c.Sent, c.SentBytes, c.Trimmed, c.Marked, c.Dropped = pc.sent, pc.sentBytes, pc.trimmed, pc.marked, pc.dropped
	}
	return c
}

// Queued returns the bytes in port p's data and header queues.
func (s *Switch) Queued(p int) (data, header int) {
	return s.ports[p].dataBytes, s.ports[p].hdrBytes
}

// Backlog reports whether port p has a packet Dequeue would return.
func (s *Switch) Backlog(p int) bool {
	pt := &s.ports[p]
	if s.credit != nil {
		return s.canSend(p, VLControl, &pt.hdr) || !pt.paused && s.canSend(p, VLData, &pt.data)
	}
	return pt.hdr.n > 0 || pt.data.n > 0 && !pt.paused
}

// Enqueue offers a packet that Forward routed to port out, having arrived
// on port in, to out's queues at now. in is -1 for a packet that came in
// on no port (one that is not a port of the switch counts as -1). pkt
// holds its headers (or all of it) and wireLen its length on the wire;
// Enqueue may trim pkt in place and set its CE mark. The verdict says
// what happened.
func (s *Switch) Enqueue(now mtime.Picos, out, in int, h Handle, pkt []byte, wireLen int) Verdict {
	pt := &s.ports[out]
	q := &s.qcfgs[pt.cfg]
	v := Verdict{Len: len(pkt), WireLen: wireLen}
	if !pt.up {
		return s.reject(out, v, DropLinkDown)
	}
	tc := wire.OuterTrafficClass(pkt)
	dscp := tc >> 2
	d := &s.cfg.DSCP
	prio := dscp == d.Control || dscp == d.Trimmed || dscp == d.TrimmedLastHop
	if !prio {
		if q.ECNK > 0 && (!q.LastHop || q.ECNLastHop) && pt.dataBytes > q.ECNK && tc&3 != 0 && (q.MarkVictims || !s.victim(out)) {
			if wire.MarkCE(pkt) {
				v.Marked = true
				s.Counters.Marked++
				s.counts(out).marked++
			}
		} else if q.ECNK == 0 && q.ECNMax > 0 && (!q.LastHop || q.ECNLastHop) && pt.dataBytes > q.ECNMin && tc&3 != 0 {
			mark := pt.dataBytes >= q.ECNMax
			if !mark {
				p := float64(pt.dataBytes-q.ECNMin) / float64(q.ECNMax-q.ECNMin)
				mark = float64(s.rng.Uint64()>>11)*(1.0/(1<<53)) < p
			}
			if mark && wire.MarkCE(pkt) {
				v.Marked = true
				s.Counters.Marked++
				s.counts(out).marked++
			}
		}
		switch {
		case q.Lossless || q.Credits > 0:
		case q.Trim && dscp != d.NoTrim && pt.dataBytes+wireLen > q.TrimAt:
			dscpT := d.Trimmed
			if q.LastHop {
				dscpT = d.TrimmedLastHop
			}
			if q.TrimTo > 0 {
				// Any packet, a probe too: one no longer is only redirected.
				wire.SetOuterDSCP(pkt, dscpT)
				v.Trimmed, v.Len, v.WireLen = true, min(len(pkt), q.TrimTo), min(wireLen, q.TrimTo)
			} else {
				t, err := wire.Trim(pkt, dscpT)
				if err != nil {
					// Not a data packet (a probe, say): drop it.
					return s.reject(out, v, DropQueueFull)
				}
				v.Trimmed, v.Len, v.WireLen = true, len(t), len(t)
			}
			if q.LastHop {
				s.Counters.TrimmedLastHop++
			} else {
				s.Counters.Trimmed++
			}
			s.counts(out).trimmed++
			prio = true
		case pt.dataBytes+wireLen > q.Buffer:
			return s.reject(out, v, DropQueueFull)
		}
	}
	e := entry{h: h, wl: uint32(v.WireLen), in: int32(in), at: now}
	if prio {
		if pt.hdrBytes+v.WireLen > q.HeaderBuffer && !q.Lossless && q.Credits == 0 {
			return s.reject(out, v, DropHeaderFull)
		}
		pt.hdr.push(&s.blocks, e)
		pt.hdrBytes += v.WireLen
	} else {
		pt.data.push(&s.blocks, e)
		pt.dataBytes += v.WireLen
	}
	if s.ingress != nil && in >= 0 && in < len(s.ingress) {
		s.ingress[in] += v.WireLen
		if !s.ingPaused[in] && s.ingress[in] > s.qcfgs[s.ports[in].cfg].PFCXoff && s.qcfgs[s.ports[in].cfg].Lossless {
			s.ingPaused[in] = true
			v.Pause = true
			s.Counters.Pauses++
		}
	}
	s.Counters.Enqueued++
	if b := int64(pt.dataBytes + pt.hdrBytes); b > pt.maxBytes {
		pt.maxBytes = b
	}
	return v
}

func (s *Switch) reject(p int, v Verdict, c DropCause) Verdict {
	v.Drop = c
	s.countDrop(p, c)
	return v
}

// countDrop counts a packet of port p's dropped for cause c.
func (s *Switch) countDrop(p int, c DropCause) {
	s.Counters.Drops[c]++
	s.counts(p).dropped++
}

// countSent counts a packet of wl wire bytes port p sent.
func (s *Switch) countSent(p int, wl uint32) {
	s.Counters.Sent++
	s.Counters.SentBytes += uint64(wl)
	c := s.counts(p)
	c.sent++
	c.sentBytes += uint64(wl)
}

// Dequeue takes the next packet to send from port p at now: the header
// queue first (strict priority), then the data queue unless the port is
// paused; on a credit-limited port, each only when the far end has
// credits for its head (credit.go). ok is false when there is none.
func (s *Switch) Dequeue(now mtime.Picos, p int) (d Dequeued, ok bool) {
	if s.credit != nil {
		return s.dequeueCredit(now, p)
	}
	pt := &s.ports[p]
	var e entry
	switch {
	case pt.hdr.n > 0:
		e = pt.hdr.pop(&s.blocks)
		pt.hdrBytes -= int(e.wl)
	case pt.data.n > 0 && !pt.paused:
		e = pt.data.pop(&s.blocks)
		pt.dataBytes -= int(e.wl)
	default:
		return Dequeued{Resume: -1}, false
	}
	s.countSent(p, e.wl)
	d = Dequeued{Handle: e.h, WireLen: int(e.wl), Sojourn: now - e.at, Resume: -1}
	if s.ingress != nil && e.in >= 0 && int(e.in) < len(s.ingress) {
		in := int(e.in)
		s.ingress[in] -= int(e.wl)
		if s.ingPaused[in] && s.ingress[in] <= s.qcfgs[s.ports[in].cfg].PFCXon {
			s.ingPaused[in] = false
			d.Resume = in
			s.Counters.Resumes++
		}
	}
	return d, true
}

// Flush empties port p's queues, calling free for each packet (counted as
// DropLinkDown). It returns the ingress ports whose pause may be lifted
// by appending them to resume.
func (s *Switch) Flush(p int, free func(Handle), resume []int) []int {
	pt := &s.ports[p]
	for _, r := range []*fifo{&pt.hdr, &pt.data} {
		for r.n > 0 {
			e := r.pop(&s.blocks)
			free(e.h)
			s.countDrop(p, DropLinkDown)
			if s.ingress != nil && e.in >= 0 && int(e.in) < len(s.ingress) {
				in := int(e.in)
				s.ingress[in] -= int(e.wl)
				if s.ingPaused[in] && s.ingress[in] <= s.qcfgs[s.ports[in].cfg].PFCXon {
					s.ingPaused[in] = false
					s.Counters.Resumes++
					resume = append(resume, in)
				}
			}
		}
	}
	pt.dataBytes, pt.hdrBytes = 0, 0
	return resume
}

// SerializationPs returns how long wireLen bytes take to serialise at
// bitsPerSec, in picoseconds, rounded up.
func SerializationPs(wireLen int, bitsPerSec int64) mtime.Picos {
	if bitsPerSec <= 0 {
		return 0
	}
	n := int64(wireLen) * 8 * 1_000_000_000_000
	return mtime.Picos((n + bitsPerSec - 1) / bitsPerSec)
}

// Transmitter is the serialiser of one port: a pure calculator of when
// the port is free. The zero value with BitsPerSec set is ready.
type Transmitter struct {
	BitsPerSec int64
	BusyUntil  mtime.Picos
}

// Free reports whether the port can start a packet at now.
func (t *Transmitter) Free(now mtime.Picos) bool { return t.BusyUntil <= now }

// Start begins sending wireLen bytes at now (or when the port frees, if
// later) and returns when the last bit leaves.
func (t *Transmitter) Start(now mtime.Picos, wireLen int) (done mtime.Picos) {
	start := max(now, t.BusyUntil)
	t.BusyUntil = start + SerializationPs(wireLen, t.BitsPerSec)
	return t.BusyUntil
}
