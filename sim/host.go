package sim

// The host adapter: a packet into a NIC, and a NIC's transmits,
// completions and deadlines out of it.

import (
	"fmt"
	"math"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/vswitch"
	"github.com/openmrc/mrc/wire"
)

func (s *shard) hostRecv(hi int32, port int, h uint32, p *packet, hdr []byte) {
	w := s.w
	if wl := int32(p.wl); wl > int32(p.n)+w.trailer {
		s.planeRx[port] += uint64(wl - int32(p.n) - w.trailer)
	}
	if w.hostTaps != nil {
		s.tapHost(hi, port, false, 0, hdr[:p.n], int(p.wl))
	}
	hs := &w.hosts[hi]
	hs.nic.HandleDatagram(ns(s.now), port, hdr[:p.n], int(p.wl))
	s.creditBackPkt(w.hostOut(hi, port)^1, p, hdr)
	s.release(h)
	s.afterHost(hi)
}

// afterHost hands out what host hi's NIC has to say after an input:
// completions, packets for its free ports, its next deadline.
func (s *shard) afterHost(hi int32) {
	s.drain(hi)
	s.pump(hi)
	s.armTimer(hi)
}

func (s *shard) pump(hi int32) {
	w := s.w
	hs := &w.hosts[hi]
	if s.now < hs.freeAt {
		return // every port is still serialising: nothing can be sent
	}
	planes := w.t.Planes
	var free verbs.PortMask
	blocked := hs.paused | hs.down
	freeAt := never
	for p, l := range w.t.HostLink[int(hi)*planes : int(hi+1)*planes] {
		b := w.tx[2*l].busyUntil // 2l: hostOut
		if b <= s.now && blocked&(1<<p) == 0 && w.hostCredited(hi, p) {
			free |= 1 << p
			continue
		}
		freeAt = min(freeAt, b)
	}
	for free != 0 {
		tx, ok := hs.nic.PollTransmit(ns(s.now), free, s.scratch)
		if !ok {
			break
		}
		if tx.Len > pktCap || tx.Len < wire.IPv6Len || tx.WireLen > math.MaxUint16 || tx.Port < 0 || tx.Port >= planes || free&(1<<tx.Port) == 0 {
			s.err = fmt.Errorf("sim: host %d's NIC returned a transmit the simulator cannot carry: %+v (free %#x, header room %d)",
				hi, tx, free, pktCap)
			break
		}
		h, ok := s.alloc(tx.Len)
		if !ok {
			break
		}
		p, hdr := s.pkt(h)
		copy(hdr[:tx.Len], s.scratch[:tx.Len])
		p.n, p.wl = uint8(tx.Len), uint16(tx.WireLen)
		if s.pool.tags != nil {
			*s.pool.tag(h & idxMask) = pktTag{hi, tx.QPN}
		}
		if w.hostTaps != nil {
			s.tapHost(hi, tx.Port, true, tx.QPN, hdr[:p.n], int(p.wl))
		}
		w.spendHostCredit(hi, tx.Port, hdr[:p.n], tx.WireLen)
		dl := w.hostOut(hi, tx.Port)
		wl := tx.WireLen + w.overhead
		ser := vswitch.SerializationPs(wl, w.lk[dl].rate)
		t := &w.tx[dl]
		t.busyUntil, t.pending = s.now+ser, true
		t.sentBytes += uint64(wl)
		s.planeTx[tx.Port] += uint64(wl)
		s.push(s.now+ser, evTxDone, 0, dl)
		s.send(dl, h, s.now+ser+w.lk[dl].delay)
		freeAt = min(freeAt, t.busyUntil)
		free &^= 1 << tx.Port
	}
	if free != 0 {
		freeAt = s.now // a port left idle: the next input may use it
	}
	hs.freeAt = freeAt
}

// drain takes host hi's completions and events: flow progress and the
// counters of QP errors and EV state changes.
func (s *shard) drain(hi int32) {
	nic := s.w.hosts[hi].nic
	// Most inputs leave no event: asking first costs less than polling.
	for nic.PendingEvents() > 0 {
		ev, _ := nic.PollEvent()
		switch ev.Kind {
		case verbs.EventWriteDone:
			s.flowWritten(int32(ev.WRID), ev.Err)
		case verbs.EventRecvImm:
			s.flowReceived(int32(ev.WRID))
		case verbs.EventQPError:
			s.qpErrors++
		case verbs.EventEVState:
			if int(ev.To) < len(s.evTo) {
				s.evTo[ev.To]++
			}
		}
	}
}

// armTimer schedules host hi's next deadline if it is earlier than the
// one already scheduled; a later one is left to a harmless early wake-up.
func (s *shard) armTimer(hi int32) {
	hs := &s.w.hosts[hi]
	nt := hs.nic.NextTimeout()
	if nt == mtime.Never || nt > mtime.Time(never/1000) {
		return
	}
	at := max(nt.Picos(), s.now)
	if at < hs.timerAt {
		hs.timerGen = (hs.timerGen + 1) & 0xFFFFFF
		hs.timerAt = at
		s.push(at, evTimer, hs.timerGen, hi)
	}
}

func (s *shard) timer(hi int32, gen uint32) {
	hs := &s.w.hosts[hi]
	if gen != hs.timerGen {
		return // superseded by an earlier deadline
	}
	hs.timerAt = never
	hs.nic.HandleTimeout(ns(s.now))
	s.afterHost(hi)
}
