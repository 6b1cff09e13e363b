package vswitch

import (
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/wire"
)

// Credit-based link-level flow control, as InfiniBand does it (IBTA
// Vol. 1 §7.9): a port may send a packet only while the buffer at the far
// end of its link has room for it, counted in credits of CreditBlock
// bytes per virtual lane; the far end returns the credits as its buffer
// drains. Nothing is ever dropped for lack of buffer.
//
// The switch is output-queued, so an ingress port's "input buffer" is
// the bytes it has queued anywhere in the switch, as PFC counts them:
// Dequeue reports the ingress port and VL of every packet it sends, and
// the caller returns that many credits to the sender on the ingress
// link, after the link's delay. The switch's own egress ports hold the
// credits their far ends grant (QueueConfig.Credits) and AddCredits
// tops them up.

// Virtual lanes. A port's data queue is VL 0; its strict-priority header
// queue (control packets, DSCP Control) is VL 1, which IB's VL
// arbitration serves first as a high-priority lane.
const (
	VLData    = 0
	VLControl = 1
	NumVLs    = 2
)

// CreditBlock is the unit of IB flow-control credits: 64 bytes (IBTA
// Vol. 1 §7.9). A packet takes its length rounded up to whole blocks.
const CreditBlock = 64

// CreditBytes returns the credits a packet of wireLen bytes takes.
func CreditBytes(wireLen int) int { return (wireLen + CreditBlock - 1) / CreditBlock * CreditBlock }

// VL returns the virtual lane the switch queues pkt on: VLControl for the
// header-queue classes (Control, Trimmed, TrimmedLastHop), else VLData.
// Senders that are not switches (NICs) classify their packets with it to
// spend the right lane's credits.
func (d *DSCP) VL(pkt []byte) int {
	dscp := wire.OuterTrafficClass(pkt) >> 2
	if dscp == d.Control || dscp == d.Trimmed || dscp == d.TrimmedLastHop {
		return VLControl
	}
	return VLData
}

// credits are one egress port's credits, in bytes, per VL, and whether
// its data lane has waited for credits since its queue was last empty.
type credits struct {
	n       [NumVLs]int32
	starved bool
}

// Credits returns the credits port p holds for lane vl: the bytes the far
// end's buffer has room for. It is 0 for a port whose queue has no
// credit limit.
func (s *Switch) Credits(p, vl int) int {
	if s.credit == nil {
		return 0
	}
	return int(s.credit[p].n[vl])
}

// AddCredits gives port p n more bytes of credit on lane vl: the far end
// of its link has freed that much of its buffer. The caller then checks
// Backlog, as a packet may now be sendable.
func (s *Switch) AddCredits(p, vl, n int) {
	if s.credit != nil {
		s.credit[p].n[vl] += int32(n)
	}
}

// initCredits gives port p the credits of its queue configuration: the
// whole far-end buffer, per lane.
func (s *Switch) initCredits(p int) {
	q := &s.qcfgs[s.ports[p].cfg]
	if q.Credits == 0 {
		return
	}
	if s.credit == nil {
		s.credit = make([]credits, len(s.ports))
	}
	for vl := range NumVLs {
		s.credit[p].n[vl] = int32(q.Credits)
	}
}

// creditMode reports whether port p's sending is limited by credits.
func (s *Switch) creditMode(p int) bool {
	return s.credit != nil && s.qcfgs[s.ports[p].cfg].Credits > 0
}

// canSend reports whether queue f's head packet may go on port p's lane
// vl: it has one and, under credits, the far end has room for it.
func (s *Switch) canSend(p, vl int, f *fifo) bool {
	if f.n == 0 {
		return false
	}
	return !s.creditMode(p) || int(s.credit[p].n[vl]) >= CreditBytes(int(f.peekLen(&s.blocks)))
}

// victim reports whether port p is a victim of congestion rather than its
// root: its data lane has had to wait for credits since its queue was
// last empty, so what fills it is congestion further on (IBTA Vol. 1
// Annex A10: a switch marks FECN at the root of congestion, not at its
// victims unless told to). A root, whose far end drains as fast as the
// port sends, never waits with the buffers a link's credit loop needs.
func (s *Switch) victim(p int) bool {
	return s.creditMode(p) && s.credit[p].starved
}

// dequeueCredit is Dequeue for a switch with credit-limited ports: the
// header queue (VL 1) first if the far end has room for its head, then
// the data queue (VL 0), each spending its lane's credits.
func (s *Switch) dequeueCredit(now mtime.Picos, p int) (Dequeued, bool) {
	pt := &s.ports[p]
	var e entry
	vl := VLControl
	switch {
	case s.canSend(p, VLControl, &pt.hdr):
		e = pt.hdr.pop(&s.blocks)
		pt.hdrBytes -= int(e.wl)
	case !pt.paused && s.canSend(p, VLData, &pt.data):
		e = pt.data.pop(&s.blocks)
		pt.dataBytes -= int(e.wl)
		vl = VLData
	default:
		if s.creditMode(p) && pt.data.n > 0 && !pt.paused {
			s.credit[p].starved = true
		}
		return Dequeued{Resume: -1, In: -1}, false
	}
	if s.creditMode(p) {
		s.credit[p].n[vl] -= int32(CreditBytes(int(e.wl)))
		if pt.data.n == 0 {
			s.credit[p].starved = false
		}
	}
	s.countSent(p, e.wl)
	return Dequeued{Handle: e.h, WireLen: int(e.wl), Sojourn: now - e.at, Resume: -1, In: int(e.in), VL: vl}, true
}

// FlushCredits empties port p's queues as Flush does, calling free for
// each packet with the ingress port and lane whose buffer it held, so
// that the caller returns those credits upstream.
func (s *Switch) FlushCredits(p int, free func(h Handle, in, vl, wireLen int)) {
	pt := &s.ports[p]
	for vl, f := range [NumVLs]*fifo{VLData: &pt.data, VLControl: &pt.hdr} {
		for f.n > 0 {
			e := f.pop(&s.blocks)
			s.countDrop(p, DropLinkDown)
			free(e.h, int(e.in), vl, int(e.wl))
		}
	}
	pt.dataBytes, pt.hdrBytes = 0, 0
	if s.credit != nil {
		s.credit[p].starved = false
	}
}
