package sim

// The switch adapter: a packet into a vswitch, and a port's queue onto
// its link.

import "github.com/openmrc/mrc/vswitch"

func (s *shard) switchRecv(si int32, in int, h uint32, p *packet, hdr []byte) {
	w := s.w
	sw := &w.sws[si]
	pkt := hdr[:p.n]
	if w.swTaps != nil {
		s.tapSwitch(si, int(sw.portBase)+in, false, pkt, int(p.wl))
	}
	out, d := sw.vs.Forward(pkt, in)
	if d != vswitch.DropNone {
		if d == vswitch.DropBlackhole && sw.fail >= 0 {
			s.hit(sw.fail, h, p, hdr)
		}
		s.creditBackPkt(w.swOut(si, in)^1, p, hdr)
		s.release(h)
		return
	}
	odl := w.swDL[int(sw.portBase)+out]
	v := sw.vs.Enqueue(s.now, out, in, vswitch.Handle(h), pkt, int(p.wl))
	if s.hot != nil {
		s.hotEnqueue(int(sw.portBase)+out, h, v)
	}
	if v.Drop != vswitch.DropNone {
		if v.Drop == vswitch.DropLinkDown {
			if f := w.tx[odl].fail; f >= 0 {
				s.hit(f, h, p, hdr)
			}
		}
		s.creditBackPkt(w.swOut(si, in)^1, p, hdr)
		s.release(h)
		return
	}
	p.n, p.wl = uint8(v.Len), uint16(v.WireLen)
	if v.Pause {
		s.pfc(si, in, xPause)
	}
	s.swKick(si, out, odl)
}

// swKick makes switch si's port (link dl) send now if it is idle, or
// makes sure an event will restart it when it frees.
func (s *shard) swKick(si int32, port int, dl int32) {
	tx := &s.w.tx[dl]
	if tx.busyUntil <= s.now {
		s.swStart(si, port, dl)
		return
	}
	if !tx.pending {
		tx.pending = true
		s.push(tx.busyUntil, evTxDone, 0, dl)
	}
}

// swStart starts sending the next packet queued at switch si's port, if
// any. Only a port that still has packets queued schedules the event
// that sends the next one: an idle link costs no event per packet.
func (s *shard) swStart(si int32, port int, dl int32) {
	w := s.w
	vs := w.sws[si].vs
	d, ok := vs.Dequeue(s.now, port)
	if !ok {
		return
	}
	if d.Resume >= 0 {
		s.pfc(si, d.Resume, xResume)
	}
	if w.cfg.Transport.Credits {
		s.creditBack(w.swOut(si, d.In)^1, d.VL, d.WireLen)
	}
	if s.hot != nil && d.Sojourn > w.queuedAt {
		s.hotDequeue(int(w.sws[si].portBase)+port, uint32(d.Handle), d.Sojourn)
	}
	if w.swTaps != nil {
		p, hdr := s.pkt(uint32(d.Handle))
		s.tapSwitch(si, int(w.t.Switches[si].PortBase)+port, true, hdr[:p.n], int(p.wl))
	}
	wl := d.WireLen + w.overhead
	ser := vswitch.SerializationPs(wl, w.lk[dl].rate)
	tx := &w.tx[dl]
	tx.busyUntil = s.now + ser
	tx.sentBytes += uint64(wl)
	if !tx.pending && vs.Backlog(port) {
		tx.pending = true
		s.push(tx.busyUntil, evTxDone, 0, dl)
	}
	s.send(dl, uint32(d.Handle), s.now+ser+w.lk[dl].delay)
}
