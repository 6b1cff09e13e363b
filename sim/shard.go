package sim

import (
	"fmt"
	"math/rand/v2"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/roce"
	"github.com/openmrc/mrc/sim/workload"
	"github.com/openmrc/mrc/vswitch"
	"github.com/openmrc/mrc/wire"
)

// shard is one partition of the world: its own clock, event queue, packet
// pool and random source. During a window it touches only its own nodes
// (and the sender or receiver half of their links); packets for other
// partitions go out as messages merged between windows.
type shard struct {
	w     *World
	id    int
	now   Time
	queue *calendar
	seq   uint64
	pool  *pool
	rng   *rand.Rand
	out   [][]xmsg // by destination partition

	remoteFree [][]uint32 // packets of other partitions' pools to hand back, by owner
	scratch    []byte
	events     uint64
	err        error

	planeRx   []uint64 // payload bytes delivered to hosts, by plane
	planeTx   []uint64 // wire bytes sent by hosts, by plane
	linkDrops [vswitch.NumDropCauses]uint64
	// Per failure record: the data and control packets it took, and
	// when it took the last of each; per (failure record, flow): when it
	// took the flow's first and last data packets.
	failHits    []uint64
	failCtl     []uint64
	failLast    []Time
	failLastCtl []Time
	qpFirst     map[uint64]Time
	qpLast      map[uint64]Time
	evTo        [4]uint64
	qpErrors    uint64
	sendDone    int
	recvDone    int
	failed      int
	lastDone    Time
	resume      []int

	// Observations waiting for the end of the window (observe.go).
	caps   []capRec
	capBuf []byte
	traces []traceRec
}

func (s *shard) push(at Time, k evKind, aux uint32, id int32) {
	s.seq++
	s.queue.push(event{at: at, seq: s.seq, arg: mkArg(k, aux, id)})
}

// next returns the time of the earliest pending event, or never.
func (s *shard) next() Time { return s.queue.min() }

// run processes every event before end.
func (s *shard) run(end Time) {
	for s.err == nil {
		top := s.queue.advance(end)
		if top == nil || top.at >= end {
			break
		}
		e := s.queue.pop()
		s.now = e.at
		s.events++
		switch e.kind() {
		case evArrive:
			s.arrive(e.id())
		case evTxDone:
			s.txDone(e.id())
		case evTimer:
			s.timer(e.id(), e.aux())
		case evFlowStart:
			s.startFlow(e.id())
		case evAction:
			s.applyAction(e.id())
		case evReconverge:
			s.reconverge()
		case evLocalRepair:
			s.localRepair(e.id())
		case evPFC:
			s.pfcArrive(e.id(), e.aux())
		}
	}
}

// ingest merges the messages other partitions sent this one during the
// last window, in partition order then sending order: deterministic
// whatever the number of workers. It also takes back the packets of this
// partition's pool that others have finished with.
func (s *shard) ingest() {
	for _, src := range s.w.shards {
		msgs := src.out[s.id]
		for i := range msgs {
			m := &msgs[i]
			if m.h == xPause || m.h == xResume {
				s.push(m.at, evPFC, m.h&0xFFFFFF, m.dl)
				continue
			}
			s.enpipe(m.dl, m.h, m.at)
		}
		src.out[s.id] = msgs[:0]
		if f := src.remoteFree[s.id]; len(f) > 0 {
			s.pool.free = append(s.pool.free, f...)
			src.remoteFree[s.id] = f[:0]
		}
	}
}

// pkt returns packet h, wherever its pool is.
func (s *shard) pkt(h uint32) *packet {
	c := s.w.pools[h>>idxBits].chunks[(h&idxMask)>>chunkBits]
	return &c.pkts[h&(chunkSize-1)]
}

func (s *shard) chunkOf(h uint32) *chunk {
	return s.w.pools[h>>idxBits].chunks[(h&idxMask)>>chunkBits]
}

// alloc takes a packet from this partition's pool.
func (s *shard) alloc() (uint32, bool) {
	h, ok := s.pool.alloc()
	if !ok {
		s.err = fmt.Errorf("sim: partition %d holds more than %d packets", s.id, maxChunks*chunkSize)
	}
	return h, ok
}

// release frees packet h: into this partition's pool, or onto the list
// its owner takes back at the end of the window.
func (s *shard) release(h uint32) {
	if o := h >> idxBits; o == s.pool.id {
		s.pool.free = append(s.pool.free, h)
	} else {
		s.remoteFree[o] = append(s.remoteFree[o], h)
	}
}

// enpipe appends packet h to the pipe of directed link dl, arriving at at.
func (s *shard) enpipe(dl int32, h uint32, at Time) {
	c := s.chunkOf(h)
	i := h & (chunkSize - 1)
	c.at[i], c.next[i] = at, nilPkt
	r := &s.w.rx[dl]
	if r.tail == nilPkt {
		r.head, r.tail = h, h
		s.push(at, evArrive, 0, dl)
		return
	}
	s.chunkOf(r.tail).next[r.tail&(chunkSize-1)] = h
	r.tail = h
}

// send puts packet h on directed link dl, reaching the far node at at.
func (s *shard) send(dl int32, h uint32, at Time) {
	info := &s.w.lk[dl]
	if int(info.recvShard) == s.id {
		s.enpipe(dl, h, at)
		return
	}
	s.out[info.recvShard] = append(s.out[info.recvShard], xmsg{at: at, dl: dl, h: h})
}

// arrive delivers the head of dl's pipe to its far node.
func (s *shard) arrive(dl int32) {
	w := s.w
	r := &w.rx[dl]
	h := r.head
	c := s.chunkOf(h)
	r.head = c.next[h&(chunkSize-1)]
	if r.head == nilPkt {
		r.tail = nilPkt
	} else {
		s.push(s.chunkOf(r.head).at[r.head&(chunkSize-1)], evArrive, 0, dl)
	}
	p := &c.pkts[h&(chunkSize-1)]
	if !r.up {
		if r.fail >= 0 {
			s.hit(r.fail, p)
		}
		s.linkDrops[vswitch.DropLinkDown]++
		s.release(h)
		return
	}
	if r.loss > 0 {
		if r.lossFail >= 0 {
			s.hit(r.lossFail, p)
		}
		if s.rng.Float64() < r.loss {
			s.linkDrops[vswitch.DropLossy]++
			s.release(h)
			return
		}
	}
	info := &w.lk[dl]
	hosts := int32(w.t.Hosts)
	if info.to < hosts {
		s.hostRecv(info.to, int(info.toPort), h, p)
	} else {
		s.switchRecv(info.to-hosts, int(info.toPort), h, p)
	}
}

// hit counts packet p as traffic taken by failure record f now: a data
// packet (also per flow) or a QP's control packet (ACK, SACK, NACK,
// CNP). Probes and endpoint requests are not traffic: MRC probes a
// retired path on purpose.
func (s *shard) hit(f int32, p *packet) {
	switch trafficClass(p.data[:p.n]) {
	case classData:
		s.failHits[f]++
		s.failLast[f] = s.now
		if fl, ok := s.w.qpFlow[qpKey(p.src, p.qpn)]; ok {
			k := uint64(f)<<32 | uint64(fl)
			if _, ok := s.qpFirst[k]; !ok {
				s.qpFirst[k] = s.now
			}
			s.qpLast[k] = s.now
		}
	case classControl:
		s.failCtl[f]++
		s.failLastCtl[f] = s.now
	}
}

func (s *shard) hostRecv(hi int32, port int, h uint32, p *packet) {
	w := s.w
	if p.wl > int32(p.n)+wire.ICRCLen {
		s.planeRx[port] += uint64(p.wl - int32(p.n) - wire.ICRCLen)
	}
	if w.hostTaps != nil {
		s.tapHost(hi, port, false, 0, p.data[:p.n], int(p.wl))
	}
	hs := &w.hosts[hi]
	hs.nic.HandleDatagram(ns(s.now), port, p.data[:p.n], int(p.wl))
	s.release(h)
	s.afterHost(hi)
}

func (s *shard) switchRecv(si int32, in int, h uint32, p *packet) {
	w := s.w
	sw := &w.sws[si]
	pkt := p.data[:p.n]
	if w.swTaps != nil {
		s.tapSwitch(int(w.t.Switches[si].PortBase)+in, false, pkt, int(p.wl))
	}
	out, d := sw.vs.Forward(pkt, in)
	if d != vswitch.DropNone {
		if d == vswitch.DropBlackhole && sw.fail >= 0 {
			s.hit(sw.fail, p)
		}
		s.release(h)
		return
	}
	odl := w.swDL[int(w.t.Switches[si].PortBase)+out]
	v := sw.vs.Enqueue(s.now, out, in, vswitch.Handle(h), pkt, int(p.wl))
	if v.Drop != vswitch.DropNone {
		if v.Drop == vswitch.DropLinkDown {
			if f := w.tx[odl].fail; f >= 0 {
				s.hit(f, p)
			}
		}
		s.release(h)
		return
	}
	p.n, p.wl = uint16(v.Len), int32(v.WireLen)
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
	if w.swTaps != nil {
		p := s.pkt(uint32(d.Handle))
		s.tapSwitch(int(w.t.Switches[si].PortBase)+port, true, p.data[:p.n], int(p.wl))
	}
	wl := d.WireLen + w.overhead
	ser := vswitch.SerializationPs(wl, w.lk[dl].rate)
	tx := &w.tx[dl]
	tx.busyUntil = s.now + ser
	tx.sentPkts++
	tx.sentBytes += uint64(wl)
	if !tx.pending && vs.Backlog(port) {
		tx.pending = true
		s.push(tx.busyUntil, evTxDone, 0, dl)
	}
	s.send(dl, uint32(d.Handle), s.now+ser+w.lk[dl].delay)
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

// pfc sends a PFC frame from switch si's port in to the sender of the link
// arriving there.
func (s *shard) pfc(si int32, in int, kind uint32) {
	odl := s.w.swOut(si, in)
	s.sendPFC(odl^1, kind, s.now+s.w.lk[odl].delay)
}

func (s *shard) sendPFC(dl int32, kind uint32, at Time) {
	target := s.w.lk[dl].sendShard
	if int(target) == s.id {
		s.push(at, evPFC, kind&0xFFFFFF, dl)
		return
	}
	s.out[target] = append(s.out[target], xmsg{at: at, dl: dl, h: kind})
}

// pfcArrive pauses or resumes the sender of directed link dl.
func (s *shard) pfcArrive(dl int32, aux uint32) {
	kind := xResume
	if aux == xPause&0xFFFFFF {
		kind = xPause
	}
	w := s.w
	info := &w.lk[dl]
	hosts := int32(w.t.Hosts)
	if info.from < hosts {
		hs := &w.hosts[info.from]
		bit := uint32(1) << info.fromPort
		if kind == xPause {
			hs.paused |= bit
		} else {
			hs.paused &^= bit
			s.afterHost(info.from)
		}
		return
	}
	si := info.from - hosts
	w.sws[si].vs.SetPaused(int(info.fromPort), kind == xPause)
	if kind == xResume {
		s.swKick(si, int(info.fromPort), dl)
	}
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
	planes := w.t.Planes
	var free mrc.PortMask
	for p := range planes {
		if w.tx[w.hostOut(hi, p)].busyUntil <= s.now && (hs.paused|hs.down)&(1<<p) == 0 {
			free |= 1 << p
		}
	}
	for free != 0 {
		tx, ok := hs.nic.PollTransmit(ns(s.now), free, s.scratch)
		if !ok {
			return
		}
		if tx.Len > pktCap || tx.Len < wire.IPv6Len || tx.Port < 0 || tx.Port >= planes || free&(1<<tx.Port) == 0 {
			s.err = fmt.Errorf("sim: host %d's NIC returned a transmit the simulator cannot carry: %+v (free %#x, header room %d)",
				hi, tx, free, pktCap)
			return
		}
		h, ok := s.alloc()
		if !ok {
			return
		}
		p := s.pkt(h)
		copy(p.data[:tx.Len], s.scratch[:tx.Len])
		p.n, p.wl = uint16(tx.Len), int32(tx.WireLen)
		p.src, p.qpn = hi, tx.QPN
		if w.hostTaps != nil {
			s.tapHost(hi, tx.Port, true, tx.QPN, p.data[:p.n], int(p.wl))
		}
		dl := w.hostOut(hi, tx.Port)
		wl := tx.WireLen + w.overhead
		ser := vswitch.SerializationPs(wl, w.lk[dl].rate)
		t := &w.tx[dl]
		t.busyUntil, t.pending = s.now+ser, true
		t.sentPkts++
		t.sentBytes += uint64(wl)
		s.planeTx[tx.Port] += uint64(wl)
		s.push(s.now+ser, evTxDone, 0, dl)
		s.send(dl, h, s.now+ser+w.lk[dl].delay)
		free &^= 1 << tx.Port
	}
}

func (s *shard) drain(hi int32) {
	w := s.w
	nic := w.hosts[hi].nic
	for {
		ev, ok := nic.PollEvent()
		if !ok {
			return
		}
		switch ev.Kind {
		case mrc.EventWriteDone:
			f := int32(ev.WRID)
			fs := &w.flows[f]
			if ev.Err != nil && !fs.failed {
				fs.failed = true
				s.failed++
			}
			fs.sendLeft--
			if fs.sendLeft == 0 {
				fs.sendDone = s.now
				s.sendDone++
				s.lastDone = max(s.lastDone, s.now)
				s.activate(w.wl.Flows[f].SendDoneTrigger)
			}
		case mrc.EventRecvImm:
			f := int32(ev.WRID)
			fs := &w.flows[f]
			fs.recvLeft--
			if fs.recvLeft == 0 {
				fs.recvDone = s.now
				s.recvDone++
				s.lastDone = max(s.lastDone, s.now)
				s.activate(w.wl.Flows[f].RecvDoneTrigger)
			}
		case mrc.EventQPError:
			s.qpErrors++
		case mrc.EventEVState:
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
	at := max(Time(nt)*1000, s.now)
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

func (s *shard) startFlow(f int32) {
	w := s.w
	fl := &w.wl.Flows[f]
	fs := &w.flows[f]
	if fs.started {
		return
	}
	src := int32(fl.Src)
	if int(w.hosts[src].shard) != s.id {
		s.err = fmt.Errorf("sim: flow %d triggered in the wrong partition", fl.ID)
		return
	}
	fs.started, fs.start = true, s.now
	nic := w.hosts[src].nic
	remote := w.hosts[fl.Dst].nic.Memory()
	for left := fl.Size; left > 0; {
		n := min(left, maxMessage)
		if err := nic.Send(ns(s.now), fs.srcQP, uint64(f), n, remote); err != nil {
			s.err = fmt.Errorf("sim: flow %d: post: %w", fl.ID, err)
			return
		}
		left -= n
	}
	s.afterHost(src)
}

// activate counts an activation of the trigger with ID id.
func (s *shard) activate(id int) {
	if id == 0 {
		return
	}
	w := s.w
	ti := w.trigIndex[id]
	ts := &w.trig[ti]
	switch ts.kind {
	case workload.Oneshot:
		if ts.fired {
			return
		}
		ts.fired = true
	case workload.Barrier:
		ts.count--
		if ts.count > 0 || ts.fired {
			return
		}
		ts.fired = true
	}
	// A multishot trigger fires at every activation; flows that already
	// started ignore it.
	for _, f := range w.trigFlows[ti] {
		s.startFlow(f)
	}
}

// Traffic classes of packets taken by a failed element.
const (
	classOther   = iota // probes, endpoint requests, unknown
	classData           // MRC or RoCE WRITE packets
	classControl        // a QP's ACK, SACK, NACK or CNP
)

// trafficClass classifies pkt by its BTH opcode.
func trafficClass(pkt []byte) int {
	o := bthOffset(pkt)
	if o < 0 {
		return classOther
	}
	switch op := pkt[o]; {
	case wire.Opcode(op).IsData() || roce.Opcode(op).IsData():
		return classData
	case op == byte(wire.OpAck) || op == byte(wire.OpSACK) || op == byte(wire.OpNACK),
		op == byte(roce.OpAck) || op == byte(roce.OpCNP):
		return classControl
	}
	return classOther
}

// qpKey names QP qpn of host h, for World.qpFlow.
func qpKey(h int32, qpn uint32) uint64 { return uint64(uint32(h))<<32 | uint64(qpn) }
