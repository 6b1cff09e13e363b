package verbs

import (
	"fmt"

	"github.com/openmrc/mrc/internal/evset"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/wire"
)

// EventKind says what an Event reports.
type EventKind uint8

const (
	// EventWriteDone: a posted WRITE or WRITE_IMM completed at the
	// requester: every byte was acknowledged (Err nil), or the QP failed
	// first (Err ErrFlushed or the QP's error). Completions come in post
	// order.
	EventWriteDone EventKind = iota + 1
	// EventRecvImm: a WRITE_IMM from the peer completed at the responder
	// into a posted receive: every byte of it, and of every message sent
	// before it, has been placed. Completions come in the peer's send
	// order.
	EventRecvImm
	// EventQPError: the QP moved to ERROR (Err says why).
	EventQPError
	// EventEVState: an EV changed among the states the controller API
	// reports (GOOD, ASSUMED_BAD, DENIED); SKIP is internal and only
	// counted in Stats.
	EventEVState
	// EventPeerPorts: the peer announced which of its ports are up.
	EventPeerPorts
)

func (k EventKind) String() string {
	switch k {
	case EventWriteDone:
		return "write-done"
	case EventRecvImm:
		return "recv-imm"
	case EventQPError:
		return "qp-error"
	case EventEVState:
		return "ev-state"
	case EventPeerPorts:
		return "peer-ports"
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// EVState is the path state of an EV (digest §3.4).
type EVState = evset.State

// The EV states.
const (
	EVGood       = evset.Good
	EVSkip       = evset.Skip
	EVAssumedBad = evset.AssumedBad
	EVDenied     = evset.Denied
)

// EVReason says why an EV changed state.
type EVReason = evset.Reason

// Event is one output of the endpoint. Fields beyond Kind, Time and QPN
// are set as the kind's comment says.
type Event struct {
	Kind EventKind
	Time mtime.Time
	QPN  uint32

	// EventWriteDone, EventRecvImm
	WRID  uint64 // the work request's ID (EventRecvImm: the posted receive's)
	Bytes uint64 // message length
	Imm   uint32 // immediate data (EventRecvImm)
	Err   error  // nil on success

	// EventEVState
	EV       wire.EV
	Plane    int
	From, To EVState
	Reason   EVReason

	// EventPeerPorts
	PortsUp PortMask // the peer's ports that are up

	_ [8]byte // padding to 96 bytes, a multiple of 16 (see Transmit)
}

func (e Event) String() string {
	switch e.Kind {
	case EventWriteDone, EventRecvImm:
		if e.Err != nil {
			return fmt.Sprintf("%v qp=%d wr=%d err=%v", e.Kind, e.QPN, e.WRID, e.Err)
		}
		s := fmt.Sprintf("%v qp=%d wr=%d bytes=%d", e.Kind, e.QPN, e.WRID, e.Bytes)
		if e.Kind == EventRecvImm {
			s += fmt.Sprintf(" imm=%#x", e.Imm)
		}
		return s
	case EventQPError:
		return fmt.Sprintf("%v qp=%d err=%v", e.Kind, e.QPN, e.Err)
	case EventEVState:
		return fmt.Sprintf("%v qp=%d ev=%v plane=%d %v->%v (%v)", e.Kind, e.QPN, e.EV, e.Plane, e.From, e.To, e.Reason)
	case EventPeerPorts:
		return fmt.Sprintf("%v qp=%d up=%#x", e.Kind, e.QPN, e.PortsUp)
	}
	return e.Kind.String()
}
