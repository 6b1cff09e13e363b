package sim

// Links: a directed link's pipe of packets in flight, delivery at the
// far end (link failure and loss) and the serialiser's release.

import (
	"github.com/openmrc/mrc/internal/slab"
	"github.com/openmrc/mrc/vswitch"
)

// enpipe appends packet h to the pipe of directed link dl, arriving at at.
func (s *shard) enpipe(dl int32, h uint32, at Time) {
	p, _ := s.pkt(h)
	p.next = nilPkt
	r := &s.w.rx[dl]
	if r.tail == nilPkt {
		r.head, r.tail, r.headAt = h, h, at
		s.push(at, evArrive, 0, dl)
		return
	}
	t, _ := s.pkt(r.tail)
	t.next, t.nextAt = h, at
	r.tail = h
}

// send puts packet h on directed link dl, reaching the far node at at.
func (s *shard) send(dl int32, h uint32, at Time) {
	info := &s.w.lk[dl]
	if int(info.recvShard) == s.id {
		s.enpipe(dl, h, at)
		return
	}
	s.out[info.recvShard] = slab.Push(s.out[info.recvShard], xmsg{at: at, dl: dl, h: h})
}

// arrive delivers the head of dl's pipe to its far node.
func (s *shard) arrive(dl int32) {
	w := s.w
	r := &w.rx[dl]
	h := r.head
	p, hdr := s.pkt(h)
	r.head = p.next
	if r.head == nilPkt {
		r.tail = nilPkt
	} else {
		r.headAt = p.nextAt
		s.push(r.headAt, evArrive, 0, dl)
	}
	if !r.up {
		if r.fail >= 0 {
			s.hit(r.fail, h, p, hdr)
		}
		s.linkDrops[vswitch.DropLinkDown]++
		s.creditBackPkt(dl, p, hdr)
		s.release(h)
		return
	}
	if w.loss != nil && w.loss[dl].p > 0 {
		l := &w.loss[dl]
		if l.fail >= 0 {
			s.hit(l.fail, h, p, hdr)
		}
		if float64(l.rng.Uint64()>>11)*0x1p-53 < l.p {
			s.linkDrops[vswitch.DropLossy]++
			s.creditBackPkt(dl, p, hdr)
			s.release(h)
			return
		}
	}
	info := &w.lk[dl]
	hosts := int32(w.t.Hosts)
	if info.to < hosts {
		s.hostRecv(info.to, int(info.toPort), h, p, hdr)
	} else {
		s.switchRecv(info.to-hosts, int(info.toPort), h, p, hdr)
	}
}

// txDone restarts the sender of link dl when its serialiser frees. A
// switch port may have started another packet since the event was
// scheduled (one enqueued at the very instant it freed): swKick then
// waits for that one to finish rather than send two at once.
func (s *shard) txDone(dl int32) {
	w := s.w
	w.tx[dl].pending = false
	info := &w.lk[dl]
	hosts := int32(w.t.Hosts)
	if info.from < hosts {
		s.afterHost(info.from)
		return
	}
	s.swKick(info.from-hosts, int(info.fromPort), dl)
}
