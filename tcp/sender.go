package tcp

import (
	"math"
	"time"

	"github.com/openmrc/mrc/internal/fifo"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
)

// seg is one segment sent and not yet cumulatively acknowledged: the
// stream bytes [start, end). Segments keep their boundaries when resent.
type seg struct {
	start, end uint64
	sentAt     mtime.Time
	psh        bool // the segment ends a message
	sacked     bool
	lost       bool // declared lost and not yet resent
	inPipe     bool // counted in pipe (RFC 6675's estimate of bytes in flight)
	retx       bool // the last transmission was a retransmission (Karn: no RTT sample)
	// retxNxt is the sender's nxt when the segment was last resent: SACKs
	// beyond it are of data sent after the retransmission.
	retxNxt uint64
}

func (s *seg) len() int { return int(s.end - s.start) }

// write is a posted message: its bytes end the stream at end.
type write struct {
	id, bytes, end uint64
}

// sender is the sending half of a connection: stream offsets are 64-bit
// from the ISN (sequence number ISN + offset, mod 2^32).
type sender struct {
	una, nxt, end uint64 // oldest unacknowledged, next new byte, bytes posted
	segs          fifo.Queue[seg]
	writes        fifo.Queue[write] // posted, not yet completed
	wNext         int               // index in writes of the message nxt is in

	cwnd, ssthresh, pipe int    // bytes
	caAcked              int    // bytes acknowledged toward the next congestion-avoidance step
	lostPending          int    // segments with lost set
	retxOut              int    // resent segments in pipe
	highSACK             uint64 // the highest byte SACKed (exclusive)
	lossFloor            uint64
	inRecovery           bool // a loss episode is open until una reaches recover
	fastRecovery         bool // ... and it was entered by SACK/dupacks, not a timeout
	fastRetx             bool // the episode's first retransmission is due, whatever cwnd says
	recover              uint64
	dupacks              int

	srtt, rttvar, rto time.Duration
	hasRTT            bool
	rtoAt             mtime.Time

	rack rack

	// DCTCP
	alpha                float64
	ackedBytes, eceBytes int
	winEnd, cwrEnd       uint64
	sendCWR              bool
}

// init readies the sender with c. A subflow's tail loss probe makes no
// allowance for a delayed ACK, as for a segment that ends a message: its
// owner acknowledges a subflow's segments as pushed ones (Conn.AckNow,
// docs/mptcp.md).
func (s *sender) init(c *Config, subflow bool) {
	s.cwnd = c.InitCwnd * c.MSS
	s.ssthresh = 1 << 30
	s.rto = c.InitialRTO
	s.rtoAt = mtime.Never
	s.alpha = c.InitialAlpha
	s.rack.init()
	s.rack.minRTT = 1 << 62
	if !c.DisableDelayedACK && !subflow {
		s.rack.wcDelAck = c.DelAck
	}
}

// deadline returns the sender's next timer: the retransmission timeout,
// RACK's reordering timer or the tail loss probe.
func (s *sender) deadline() mtime.Time {
	return mtime.Min(s.rtoAt, mtime.Min(s.rack.at, s.rack.tlpAt))
}

// post appends a message of n bytes to the stream.
func (s *sender) post(id, n uint64) {
	s.end += n
	s.writes.Push(write{id: id, bytes: n, end: s.end})
}

// nextSeg returns the next segment to send, if any: a tail loss probe
// if one is due, else the lowest lost segment within cwnd, else new data
// (at most MSS bytes, never past the end of a message). fresh says it is
// new data.
func (q *Conn) nextSeg(now mtime.Time) (sg *seg, fresh bool) {
	s := &q.snd
	defer func() {
		if sg != nil && !q.ep.cfg.DisableRACK {
			s.armTLP(now)
		}
	}()
	if s.rack.tlpPending {
		return q.probe(now)
	}
	if s.lostPending > 0 {
		for i := range s.segs.Len() {
			g := s.segs.At(i)
			if !g.lost {
				continue
			}
			if s.pipe+g.len() > s.cwnd && !s.fastRetx {
				return nil, false
			}
			s.fastRetx = false
			g.lost, g.inPipe, g.retx, g.sentAt, g.retxNxt = false, true, true, now, s.nxt
			s.lostPending--
			s.retxOut++
			s.pipe += g.len()
			q.stats.Retransmits++
			return g, false
		}
	}
	if s.nxt >= s.end {
		return nil, false
	}
	if g := q.newSeg(now, false); g != nil {
		return g, true
	}
	return nil, false
}

// newSeg sends the next MSS of new data, within cwnd unless anyway.
func (q *Conn) newSeg(now mtime.Time, anyway bool) *seg {
	s, mss := &q.snd, q.ep.cfg.MSS
	for s.writes.At(s.wNext).end <= s.nxt {
		s.wNext++
	}
	msgEnd := s.writes.At(s.wNext).end
	n := min(uint64(mss), msgEnd-s.nxt)
	if !anyway && s.pipe+int(n) > s.cwnd {
		return nil
	}
	s.segs.Push(seg{start: s.nxt, end: s.nxt + n, sentAt: now, psh: s.nxt+n == msgEnd, inPipe: true})
	s.nxt += n
	s.pipe += int(n)
	if s.rtoAt == mtime.Never {
		s.rtoAt = now.Add(s.rto)
	}
	q.stats.DataSent++
	q.stats.PayloadSent += n
	return s.segs.At(s.segs.Len() - 1)
}

// hasData reports whether the sender has a segment cwnd lets out now.
func (s *sender) hasData(mss int) bool {
	if s.lostPending > 0 || s.rack.tlpPending {
		return true // nextSeg decides against cwnd
	}
	return s.nxt < s.end && s.pipe+min(mss, int(s.end-s.nxt)) <= s.cwnd
}

// onAck processes the acknowledgment fields of a received segment: the
// cumulative ACK ack (a stream offset), its SACK blocks (offsets, already
// clipped to what was sent) and its ECE flag. dup says the segment is a
// pure ACK that may count as a duplicate (RFC 5681 §2).
func (q *Conn) onAck(now mtime.Time, ack uint64, sacks []span, ece, dup bool) {
	s, c := &q.snd, &q.ep.cfg
	acked := 0
	if ack > s.una {
		acked = q.advance(now, ack)
		s.dupacks = 0
	} else if dup && ack == s.una && s.nxt > s.una {
		s.dupacks++
	}
	sacked, newSACK := 0, false
	for _, b := range sacks {
		n := s.sack(now, b)
		sacked += n
		newSACK = newSACK || n > 0
	}
	if c.Variant == DCTCP {
		q.dctcp(acked+sacked, ece)
	}
	lost := false
	if newSACK {
		lost = s.markLost(c.DupThresh)
		if s.retxOut > 0 && s.markLostRetransmits(c.DupThresh, c.MSS) {
			lost = true
			q.stats.LostRetransmits++
		}
	}
	if s.dupacks >= c.DupThresh && s.segs.Len() > 0 {
		if g := s.segs.At(0); !g.sacked && g.inPipe && !g.retx {
			s.declareLost(g)
			lost = true
		}
	}
	if !c.DisableRACK && (acked > 0 || newSACK) {
		s.rack.tlpOut = false
		lost = s.detect(now) || lost
	}
	if s.inRecovery && s.una >= s.recover {
		s.inRecovery, s.fastRecovery, s.fastRetx = false, false, false
	}
	if lost {
		q.enterRecovery(now)
	}
	if acked > 0 && !s.fastRecovery {
		f := 1.0
		if q.owner != nil && s.cwnd >= s.ssthresh {
			f = q.owner.Increase()
		}
		s.grow(acked, c.MSS, f)
	}
	if !c.DisableRACK {
		s.armTLP(now)
	}
}

// enterRecovery opens a loss episode, unless one is open: the window
// halves once (RFC 6675 §5, RFC 5681 §3.2), and the first lost segment
// is resent at once, whatever the window (RFC 6675 §5 step 4.3, RFC 5681
// §3.2 step 4: the fast retransmit).
func (q *Conn) enterRecovery(now mtime.Time) {
	s, mss := &q.snd, q.ep.cfg.MSS
	if s.inRecovery {
		return
	}
	s.ssthresh = max(int(s.nxt-s.una)/2, 2*mss)
	s.cwnd = s.ssthresh
	s.inRecovery, s.fastRecovery, s.recover = true, true, s.nxt
	s.fastRetx = true
	s.caAcked = 0
	s.rack.tlpAt = mtime.Never
	q.stats.FastRecoveries++
	if q.owner != nil {
		q.owner.Cut(now, false)
	}
}

// deadline returns the connection's next timer: the sender's or the
// receiver's delayed ACK.
func (q *Conn) deadline() mtime.Time { return mtime.Min(q.snd.deadline(), q.rcv.delackAt) }

// onTimer runs the connection's timers due at now: the delayed ACK, the
// retransmission timeout, RACK's reordering timer and the tail loss
// probe.
func (q *Conn) onTimer(now mtime.Time) {
	q.onDelAck(now)
	s := &q.snd
	if s.rtoAt <= now {
		q.onRTO(now)
		return
	}
	if s.rack.at <= now && s.detect(now) {
		q.enterRecovery(now)
	}
	if s.rack.tlpAt <= now {
		s.rack.tlpAt, s.rack.tlpPending = mtime.Never, true
	}
}

// advance moves una to ack: it pops the segments ack covers, takes an
// RTT sample, completes messages and restarts the timer. It returns the
// bytes newly acknowledged that were not SACKed before.
func (q *Conn) advance(now mtime.Time, ack uint64) int {
	s := &q.snd
	acked := 0
	sample := time.Duration(-1)
	for s.segs.Len() > 0 {
		g := s.segs.At(0)
		if g.end > ack {
			break
		}
		s.leavePipe(g)
		if g.lost {
			s.lostPending--
		}
		if !g.sacked {
			acked += g.len()
		}
		if !g.retx && !g.sacked {
			sample = now.Sub(g.sentAt)
		}
		if !g.sacked {
			s.rack.delivered(now, g)
		}
		s.segs.Pop()
	}
	if g := s.head(); g != nil && g.start < ack {
		// An ACK inside a segment (our receiver never sends one, a peer
		// may): the acknowledged head of it is done, the rest stays.
		cut := int(ack - g.start)
		if g.inPipe {
			s.pipe -= cut
		}
		if !g.sacked {
			acked += cut
		}
		g.start = ack
	}
	s.una = ack
	if sample >= 0 {
		q.rttSample(sample)
	}
	for s.writes.Len() > 0 {
		w, _ := s.writes.Peek()
		if w.end > s.una {
			break
		}
		s.writes.Pop()
		s.wNext = max(s.wNext-1, 0)
		if q.owner == nil {
			q.stats.WritesDone++
			q.ep.emit(verbs.Event{Kind: verbs.EventWriteDone, Time: now, QPN: q.qpn, WRID: w.id, Bytes: w.bytes})
		}
	}
	if s.una >= s.nxt {
		s.rtoAt = mtime.Never
	} else {
		s.rtoAt = now.Add(s.rto)
	}
	return acked
}

// rttSample updates SRTT, RTTVAR and RTO (RFC 6298 §2), which also ends
// any backoff.
func (q *Conn) rttSample(r time.Duration) {
	s, c := &q.snd, &q.ep.cfg
	if !s.hasRTT {
		s.srtt, s.rttvar, s.hasRTT = r, r/2, true
	} else {
		d := s.srtt - r
		if d < 0 {
			d = -d
		}
		s.rttvar = (3*s.rttvar + d) / 4
		s.srtt = (7*s.srtt + r) / 8
	}
	s.rto = min(max(s.srtt+max(time.Microsecond, 4*s.rttvar), c.MinRTO), c.MaxRTO)
	s.rack.minRTT = min(s.rack.minRTT, r)
}

// head returns the oldest segment in flight, or nil.
func (s *sender) head() *seg {
	if s.segs.Len() == 0 {
		return nil
	}
	return s.segs.At(0)
}

// sack marks the segments block b covers as SACKed and returns their
// bytes that were not SACKed before.
func (s *sender) sack(now mtime.Time, b span) int {
	// Segments are in stream order: find the first that starts at or
	// after b.start by bisection.
	lo, hi := 0, s.segs.Len()
	for lo < hi {
		m := (lo + hi) / 2
		if s.segs.At(m).start < b.start {
			lo = m + 1
		} else {
			hi = m
		}
	}
	n := 0
	for i := lo; i < s.segs.Len(); i++ {
		g := s.segs.At(i)
		if g.end > b.end {
			break
		}
		if g.sacked {
			continue
		}
		g.sacked = true
		s.rack.delivered(now, g)
		s.leavePipe(g)
		s.highSACK = max(s.highSACK, g.end)
		if g.lost {
			g.lost = false
			s.lostPending--
		}
		n += g.len()
	}
	return n
}

// markLost declares lost every segment, not SACKed and not already
// resent, with at least dupThresh SACKed segments above it (RFC 6675
// §4's IsLost, counting segments). Segments below lossFloor were judged
// before. It reports whether it declared any.
func (s *sender) markLost(dupThresh int) bool {
	count, i := 0, s.segs.Len()-1
	for ; i >= 0; i-- {
		g := s.segs.At(i)
		if g.end <= s.lossFloor {
			return false
		}
		if g.sacked {
			if count++; count == dupThresh {
				break
			}
		}
	}
	if i < 0 {
		return false
	}
	old := s.lossFloor
	s.lossFloor = s.segs.At(i).start
	found := false
	for i--; i >= 0; i-- {
		g := s.segs.At(i)
		if g.end <= old {
			break
		}
		if !g.sacked && g.inPipe && !g.retx {
			s.declareLost(g)
			found = true
		}
	}
	return found
}

func (s *sender) declareLost(g *seg) {
	g.lost = true
	s.lostPending++
	s.leavePipe(g)
}

// leavePipe takes g out of pipe, if it is in.
func (s *sender) leavePipe(g *seg) {
	if !g.inPipe {
		return
	}
	g.inPipe = false
	s.pipe -= g.len()
	if g.retx {
		s.retxOut--
	}
}

// markLostRetransmits declares lost every resent segment in pipe, not
// SACKed, above whose retransmission DupThresh segments' worth of data
// sent later has been SACKed: the retransmission was lost too (the
// lost-retransmission detection Linux did before RACK, from the SACKed
// sequence space, tcp_mark_lost_retrans). It reports whether it declared
// any.
func (s *sender) markLostRetransmits(dupThresh, mss int) bool {
	found := false
	for i := 0; i < s.segs.Len() && s.retxOut > 0; i++ {
		g := s.segs.At(i)
		if g.retx && g.inPipe && s.highSACK > g.retxNxt+uint64((dupThresh-1)*mss) {
			s.declareLost(g)
			found = true
		}
	}
	return found
}

// grow opens the window for acked bytes: slow start below ssthresh (at
// most 2 MSS per ACK, RFC 3465's L), else f MSS per window acknowledged
// (f = 1: RFC 5681 §3.1; an owner's coupled congestion control sets f,
// and shrinks the window by an MSS per window when f is negative, never
// below one MSS).
func (s *sender) grow(acked, mss int, f float64) {
	if s.cwnd < s.ssthresh {
		s.cwnd += min(acked, 2*mss)
	} else {
		if f == 1 {
			s.caAcked += acked
		} else {
			s.caAcked += int(math.Round(float64(acked) * f))
		}
		switch {
		case s.caAcked >= s.cwnd:
			s.caAcked -= s.cwnd
			s.cwnd += mss
		case s.caAcked <= -s.cwnd:
			s.caAcked += s.cwnd
			s.cwnd = max(s.cwnd-mss, mss)
		}
	}
	s.cwnd = min(s.cwnd, 1<<30)
}

// dctcp runs DCTCP's sender (RFC 8257): it counts the bytes newly
// acknowledged and those with ECE, updates alpha once per window of data,
// and cuts cwnd by alpha/2 at most once per window when ECE arrives.
func (q *Conn) dctcp(bytes int, ece bool) {
	s, c := &q.snd, &q.ep.cfg
	s.ackedBytes += bytes
	if ece {
		s.eceBytes += bytes
		q.stats.ECNEchoes++
	}
	if s.una >= s.winEnd {
		if s.ackedBytes > 0 {
			f := float64(s.eceBytes) / float64(s.ackedBytes)
			s.alpha = (1-c.G)*s.alpha + c.G*f
		}
		s.ackedBytes, s.eceBytes = 0, 0
		s.winEnd = s.nxt
	}
	if ece && s.una >= s.cwrEnd && !s.inRecovery {
		s.cwnd = max(int(float64(s.cwnd)*(1-s.alpha/2)), 2*c.MSS)
		s.ssthresh = s.cwnd
		s.caAcked = 0
		s.cwrEnd = s.nxt
		s.sendCWR = true
		q.stats.WindowCuts++
	}
}

// onRTO handles the retransmission timer (RFC 6298 §5.4–5.6, RFC 5681
// §3.1): every segment not SACKed is lost, the window falls to one
// segment, and the timer backs off.
func (q *Conn) onRTO(now mtime.Time) {
	s, c := &q.snd, &q.ep.cfg
	if s.rtoAt > now {
		return
	}
	if s.una >= s.nxt {
		s.rtoAt = mtime.Never
		return
	}
	q.stats.RetryTimeouts++
	s.ssthresh = max(int(s.nxt-s.una)/2, 2*c.MSS)
	s.cwnd, s.caAcked, s.dupacks = c.MSS, 0, 0
	for i := range s.segs.Len() {
		g := s.segs.At(i)
		if !g.sacked && !g.lost {
			s.declareLost(g)
			q.stats.LossTimeouts++
		}
	}
	s.lossFloor = s.nxt
	s.inRecovery, s.fastRecovery, s.fastRetx, s.recover = true, false, false, s.nxt
	s.rack.at, s.rack.tlpAt, s.rack.tlpPending, s.rack.tlpOut = mtime.Never, mtime.Never, false, false
	s.rto = min(2*s.rto, c.MaxRTO)
	s.rtoAt = now.Add(s.rto)
	if q.owner != nil {
		q.owner.Cut(now, true)
	}
}
