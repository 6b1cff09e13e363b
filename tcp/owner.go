package tcp

import (
	"time"

	"github.com/openmrc/mrc/mtime"
)

// Owner is the connection-level half of a multipath connection whose
// subflows are connections of this package (package mptcp). A connection
// given an owner in ConnectAttr is a subflow: its stream is the runs of
// bytes the owner posts with PostWrite, each sent as one segment when it
// fits in an MSS, and it emits no events (the owner completes messages
// at its own level). Everything else — segments, SACK, loss recovery,
// RACK-TLP, the retransmission timer, slow start — is this package's.
// The owner's methods are called during the connection's own calls
// (HandleDatagram, HandleTimeout, PollTransmit) and may post to any
// subflow of the same endpoint.
type Owner interface {
	// Outgoing is called as the connection writes a segment that
	// carries the stream bytes [start, start+n) (n = 0 for a pure ACK).
	// It may set h's PSH flag and its MPTCP option; the SACK blocks that
	// fit beside the option (Header.SACKRoom) are added after the call.
	// It reports whether the segment's data is, for the owner, a
	// retransmission although new on this connection.
	Outgoing(h *Header, start uint64, n int) (retransmit bool)
	// Incoming is called once the connection has processed a segment it
	// received: h (valid only during the call) and its n payload bytes
	// at stream offset start.
	Incoming(now mtime.Time, h *Header, start uint64, n int)
	// Increase returns the congestion-avoidance increase of the
	// connection's window relative to NewReno's one MSS per window of
	// data acknowledged: 1 for NewReno, less (or below zero) as coupled
	// congestion control decides. It is asked on each ACK of new data in
	// congestion avoidance.
	Increase() float64
	// Cut is called when the connection cuts its window for a loss: at
	// the start of a loss episode (timeout false) or when its
	// retransmission timer fires (timeout true).
	Cut(now mtime.Time, timeout bool)
}

// AckNow sends at once the ACK the connection is delaying, if any: an
// owner calls it when its application has read the data, as Linux
// acknowledges a pushed segment once it is read (tcp_cleanup_rbuf; for
// MPTCP, mptcp_cleanup_rbuf).
func (q *Conn) AckNow(now mtime.Time) {
	if q.rcv.delackAt != mtime.Never {
		q.rcv.ackNow()
		q.ep.update(q, now)
	}
}

// Acked returns the bytes of the connection's stream cumulatively
// acknowledged.
func (q *Conn) Acked() uint64 { return q.snd.una }

// Space returns the bytes the congestion window has room for beyond
// what is in flight and what is posted but not yet sent: an owner posts
// a run only if it fits (it may be negative).
func (q *Conn) Space() int { return q.snd.cwnd - q.snd.pipe - int(q.snd.end-q.snd.nxt) }

// SRTT returns the smoothed round-trip time, and false before the first
// sample.
func (q *Conn) SRTT() (time.Duration, bool) { return q.snd.srtt, q.snd.hasRTT }

// TimedOut reports whether the connection is recovering from a
// retransmission timeout: from the timeout until the cumulative ACK
// passes what was outstanding then (Linux's TCP_CA_Loss state).
func (q *Conn) TimedOut() bool { return q.snd.inRecovery && !q.snd.fastRecovery }

// Port returns the NIC port the connection lives on.
func (q *Conn) Port() int { return q.port }
