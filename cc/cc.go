// Package cc holds the congestion controllers the MRC core can run: the
// Controller interface the core calls, and UET NSCC (the algorithm MRC
// adopts, "uet-1.0-nscc"). Controllers are pure: they never read a clock;
// every method that needs the time takes it as an argument.
package cc

import (
	"time"

	"github.com/openmrc/mrc/mtime"
)

// A Controller decides how many bytes one QP may keep in flight. The core
// owns the in-flight accounting and calls the controller on every event
// that NSCC reacts to. A Controller is used by one QP and is not safe for
// concurrent use.
type Controller interface {
	// Window returns the congestion window in bytes. The core sends a new
	// packet only while inflight+size <= Window(), and always lets one
	// packet go when none is in flight. A window below a packet's size is
	// a rate: the core then spaces packets size × BaseRTT / Window() apart.
	Window() int

	// OnSent records that a packet carrying bytes was transmitted.
	OnSent(now mtime.Time, bytes int, retransmit bool)

	// OnAck is called once per received SACK.
	OnAck(now mtime.Time, a Ack)

	// OnNack is called for a NACK of a trimmed packet.
	OnNack(now mtime.Time, n Nack)

	// OnLoss is called when a packet is declared lost without a trim or a
	// NACK (the per-packet loss timer expired).
	OnLoss(now mtime.Time, bytes int)

	// OnGone is called for a packet that left flight lost, but whose loss
	// says nothing about congestion: it went into a path the core already
	// knows failed. The controller updates its accounting only.
	OnGone(now mtime.Time, bytes int)
}

// Ack is what one SACK tells the controller.
type Ack struct {
	// NewlyAcked is the number of payload bytes this SACK acknowledged for
	// the first time (cumulatively or in its bitmap).
	NewlyAcked int
	// Inflight is the number of bytes still in flight after this SACK.
	Inflight int
	// RTT is the round-trip sample of the packet that triggered the SACK,
	// or 0 when no valid sample exists (e.g. the packet was retransmitted).
	RTT time.Duration
	// ECN reports that the triggering packet arrived CE-marked
	// (SETH M=SKIP_ONCE).
	ECN bool
	// RcvCwndPen is the responder flow-control penalty from CC_STATE
	// (0..127; 0 means none).
	RcvCwndPen uint8
	// RestoreCwnd is CC_STATE r_c: the responder asks the sender to
	// restore the window saved when the penalty began.
	RestoreCwnd bool
}

// Nack is what a NACK of a trimmed packet tells the controller.
type Nack struct {
	// Bytes is the size of the trimmed packet's payload.
	Bytes int
	// Inflight is the number of bytes in flight after the trimmed packet
	// was removed from flight.
	Inflight int
	// LastHop reports NACK reason TRIMMED_LASTHOP: trimmed at the
	// receiver's last hop (incast), not in the fabric.
	LastHop bool
}

// Fixed is a Controller with a constant window. It is the "NULL" algorithm
// of the MRC controller API: congestion control disabled.
type Fixed int

var _ Controller = Fixed(0)

// Window returns the fixed window.
func (f Fixed) Window() int { return int(f) }

// OnSent does nothing.
func (Fixed) OnSent(mtime.Time, int, bool) {}

// OnAck does nothing.
func (Fixed) OnAck(mtime.Time, Ack) {}

// OnNack does nothing.
func (Fixed) OnNack(mtime.Time, Nack) {}

// OnLoss does nothing.
func (Fixed) OnLoss(mtime.Time, int) {}

// OnGone does nothing.
func (Fixed) OnGone(mtime.Time, int) {}
