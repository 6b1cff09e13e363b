package verbs

import "fmt"

// DropReason says why a received packet was discarded.
type DropReason uint8

const (
	DropMalformed   DropReason = iota // headers truncated or inconsistent
	DropBadICRC                       // ICRC mismatch
	DropBadChecksum                   // UDP checksum mismatch
	DropNotMRC                        // not UDP to port 4791, or an opcode MRC does not use
	DropUnknownQP                     // no QP with that number
	DropQPState                       // the QP cannot receive in its state
	DropBadSource                     // source address is not the QP's peer
	DropOutOfWindow                   // PSN beyond the tracking window
	DropBadRKey                       // R_Key names no region of this endpoint
	DropBounds                        // VA and length fall outside the region
	DropPhantom                       // payload not carried but the region has memory
	DropWimmLimit                     // more WRITE_IMMs outstanding than MaxWimmDest
	DropStale                         // a SACK or NACK about PSNs not in flight
	DropBadPKey                       // P_Key is not the default partition's
	DropAccess                        // the R_Key's region is local-only or of another protection domain
	DropPortStatus                    // a port status update claiming every port down, or over its rate
	DropBadEV                         // a SACK or NACK reflecting an EV that is not one of the QP's
	DropFatalNACK                     // a fatal NACK or RoCE NAK naming no PSN in flight, or from a plane the QP does not use

	// NumDropReasons counts the reasons above; a transport may use it as
	// its own "no reason to drop".
	NumDropReasons
)

var dropNames = [NumDropReasons]string{
	"malformed", "bad_icrc", "bad_checksum", "not_mrc", "unknown_qp", "qp_state",
	"bad_source", "out_of_window", "bad_rkey", "bounds", "phantom", "wimm_limit", "stale", "bad_pkey",
	"access", "port_status", "bad_ev", "fatal_nack",
}

func (r DropReason) String() string {
	if r < NumDropReasons {
		return dropNames[r]
	}
	return fmt.Sprintf("DropReason(%d)", uint8(r))
}

// Stats counts everything an endpoint or QP did. All counters only grow.
type Stats struct {
	// Requester side.
	DataSent        uint64 // data packets sent, first transmissions
	Retransmits     uint64 // data packets sent again
	PayloadSent     uint64 // payload bytes in first transmissions
	ProbesSent      uint64 // reliability probes
	SACKsReceived   uint64
	NACKsReceived   uint64 // all reasons
	TrimNACKs       uint64 // NACK TRIMMED received
	LastHopNACKs    uint64 // NACK TRIMMED_LASTHOP received
	ECNEchoes       uint64 // SACKs reporting a CE mark (M=SKIP_ONCE)
	LossTimeouts    uint64 // packets declared lost by the per-packet timer
	RetryTimeouts   uint64 // QP timeout/retry backstop expirations
	WritesDone      uint64 // WRITE/WRITE_IMM completed at the requester
	SpuriousRetrans uint64 // retransmitted packets whose original was acked
	ProtNAKsRecv    uint64 // credible RoCE NAKs (protection errors) received

	// Responder side.
	DataReceived    uint64 // data packets accepted (new PSNs)
	PayloadReceived uint64 // payload bytes placed
	Duplicates      uint64 // data packets for PSNs already received
	TrimmedReceived uint64 // trimmed headers received (each NACKed)
	CEReceived      uint64 // data packets that arrived CE-marked
	SACKsSent       uint64
	NACKsSent       uint64
	ProtNAKsSent    uint64 // RoCE NAKs (AETH) sent for protection errors
	ControlDropped  uint64 // SACKs and NACKs dropped because the control queue was full
	ImmsDelivered   uint64 // WRITE_IMM completions delivered
	AnswersWithheld uint64 // NACKs of trims, SACKs of duplicates and probe answers over their per-RTT bound

	// EV path states (digest §3.4).
	EVSkips        uint64 // GOOD -> SKIP
	EVRetired      uint64 // -> ASSUMED_BAD
	EVResurrected  uint64 // ASSUMED_BAD -> GOOD/SKIP after probes
	EVDenied       uint64 // -> DENIED by the controller
	PortUpdateSent uint64 // port status updates sent to peers

	// Drops by reason.
	Drops [NumDropReasons]uint64
}

// Dropped returns the total of all drops.
func (s Stats) Dropped() uint64 {
	var n uint64
	for _, d := range s.Drops {
		n += d
	}
	return n
}

// Add accumulates o into s.
func (s *Stats) Add(o *Stats) {
	s.DataSent += o.DataSent
	s.Retransmits += o.Retransmits
	s.PayloadSent += o.PayloadSent
	s.ProbesSent += o.ProbesSent
	s.SACKsReceived += o.SACKsReceived
	s.NACKsReceived += o.NACKsReceived
	s.TrimNACKs += o.TrimNACKs
	s.LastHopNACKs += o.LastHopNACKs
	s.ECNEchoes += o.ECNEchoes
	s.LossTimeouts += o.LossTimeouts
	s.RetryTimeouts += o.RetryTimeouts
	s.WritesDone += o.WritesDone
	s.SpuriousRetrans += o.SpuriousRetrans
	s.ProtNAKsRecv += o.ProtNAKsRecv
	s.DataReceived += o.DataReceived
	s.PayloadReceived += o.PayloadReceived
	s.Duplicates += o.Duplicates
	s.TrimmedReceived += o.TrimmedReceived
	s.CEReceived += o.CEReceived
	s.SACKsSent += o.SACKsSent
	s.NACKsSent += o.NACKsSent
	s.ProtNAKsSent += o.ProtNAKsSent
	s.ControlDropped += o.ControlDropped
	s.ImmsDelivered += o.ImmsDelivered
	s.AnswersWithheld += o.AnswersWithheld
	s.EVSkips += o.EVSkips
	s.EVRetired += o.EVRetired
	s.EVResurrected += o.EVResurrected
	s.EVDenied += o.EVDenied
	s.PortUpdateSent += o.PortUpdateSent
	for i := range s.Drops {
		s.Drops[i] += o.Drops[i]
	}
}
