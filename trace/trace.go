// Package trace is the one event schema that the MRC core, the simulator
// and the UDP datapath all emit: packets sent, acknowledged, NACKed,
// trimmed, retransmitted and lost; EV state changes; congestion-window
// changes; QP state changes; drops. A host passes a Tracer in the core's
// Config; the core calls it synchronously for every event and never when
// it is nil.
package trace

import (
	"fmt"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/wire"
)

// Kind says what a Record reports.
type Kind uint8

const (
	PacketSent          Kind = iota + 1 // a data packet's first transmission
	PacketRetransmitted                 // a data packet sent again
	PacketAcked                         // a data packet newly acknowledged (SACK)
	PacketNacked                        // a NACK received for a data packet (Reason says why)
	PacketLost                          // the per-packet loss timer declared a data packet lost
	PacketTrimmed                       // the responder received a trimmed header and NACKed it
	PacketReceived                      // the responder accepted and placed a data packet
	PacketDropped                       // a received packet was discarded (Reason says why)
	ProbeSent                           // a reliability probe went out on EV
	SACKSent                            // the responder sent a SACK
	EVState                             // an EV changed state (From, To, Reason)
	CwndChanged                         // the congestion window changed (Cwnd, Inflight)
	QPState                             // a QP changed state (From, To)
	numKinds
)

var kindNames = [numKinds]string{"", "sent", "retransmitted", "acked", "nacked", "lost", "trimmed",
	"received", "dropped", "probe_sent", "sack_sent", "ev_state", "cwnd", "qp_state"}

func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// ParseKind returns the Kind named s (as String prints it).
func ParseKind(s string) (Kind, bool) {
	for k := Kind(1); k < numKinds; k++ {
		if kindNames[k] == s {
			return k, true
		}
	}
	return 0, false
}

// Record is one traced event. Fields that do not apply to the kind are zero.
type Record struct {
	Time  mtime.Time
	Kind  Kind
	QPN   uint32
	PSN   uint32
	EV    wire.EV
	Plane int
	Bytes int // payload bytes of the packet

	Cwnd     int // CwndChanged: window and bytes in flight after the change
	Inflight int

	From, To string // EVState, QPState: state names
	Reason   string // PacketNacked, PacketDropped, EVState: why
}

// A Tracer receives records. Trace is called synchronously from the core's
// input and output calls; the record is only valid during the call.
type Tracer interface {
	Trace(r *Record)
}

// Func adapts a function to a Tracer.
type Func func(r *Record)

// Trace calls f(r).
func (f Func) Trace(r *Record) { f(r) }

// Fields says which fields of a Record a kind carries, beyond Time, Kind
// and QPN: the schema that writers of traces follow and filters test.
type Fields uint8

const (
	FieldsPacket Fields = 1 << iota // PSN, EV, Plane, Bytes
	FieldsEV                        // EV, Plane (without the packet fields)
	FieldsStates                    // From, To
	FieldsReason                    // Reason
	FieldsCwnd                      // Cwnd, Inflight
)

// Fields returns the fields records of kind k carry; an unknown kind
// carries all of them.
func (k Kind) Fields() Fields {
	switch k {
	case PacketSent, PacketRetransmitted, PacketAcked, PacketLost, PacketTrimmed, PacketReceived, ProbeSent, SACKSent:
		return FieldsPacket
	case PacketNacked, PacketDropped:
		return FieldsPacket | FieldsReason
	case EVState:
		return FieldsEV | FieldsStates | FieldsReason
	case CwndChanged:
		return FieldsCwnd
	case QPState:
		return FieldsStates
	}
	return FieldsPacket | FieldsEV | FieldsStates | FieldsReason | FieldsCwnd
}
