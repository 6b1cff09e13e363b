package tcp

import "github.com/openmrc/mrc/verbs"

// Stats counts everything an endpoint or connection did. All counters
// only grow.
//
// The embedded verbs.Stats holds the counters a host reads of every
// transport, with these meanings: DataSent and PayloadSent count new
// segments and their bytes, Retransmits segments sent again (fast
// retransmit or after a timeout), SACKsSent/SACKsReceived ACKs (with or
// without SACK blocks), ECNEchoes ACKs with ECE, RetryTimeouts
// retransmission timeouts and LossTimeouts the segments each declared
// lost, DataReceived new segments, Duplicates segments received before,
// CEReceived segments that arrived CE-marked, PayloadReceived the bytes
// received, each once, in order or not (as the RDMA transports place
// them), WritesDone and ImmsDelivered messages
// completed. Drops[verbs.DropNotMRC] counts packets that are not TCP to a
// connection of this endpoint, Drops[verbs.DropOutOfWindow] segments far
// outside the window and Drops[verbs.DropStale] ACKs of bytes never sent.
type Stats struct {
	verbs.Stats
	FastRecoveries uint64 // loss episodes entered by SACK or duplicate ACKs
	WindowCuts     uint64 // DCTCP window reductions
	// LostRetransmits counts the ACKs that found a retransmission lost
	// (by SACKs of data sent after it).
	LostRetransmits uint64
	TailProbes      uint64 // tail loss probes sent (RACK-TLP)
	DelayedAcks     uint64 // ACKs the delayed-ACK timer sent
}

// Add accumulates o into s.
func (s *Stats) Add(o *Stats) {
	s.Stats.Add(&o.Stats)
	s.FastRecoveries += o.FastRecoveries
	s.WindowCuts += o.WindowCuts
	s.LostRetransmits += o.LostRetransmits
	s.TailProbes += o.TailProbes
	s.DelayedAcks += o.DelayedAcks
}
