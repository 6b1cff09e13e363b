package mptcp

import (
	"github.com/openmrc/mrc/tcp"
	"github.com/openmrc/mrc/verbs"
)

// Stats counts everything an endpoint or connection did. All counters
// only grow.
//
// The embedded verbs.Stats holds the counters a host reads of every
// transport, at the data level: DataSent and PayloadSent count runs of
// new data handed to a subflow and their bytes; Retransmits the
// subflows' retransmissions plus Reinjections; DataReceived runs placed
// in the data stream, Duplicates runs whose bytes had all arrived (by
// another subflow), PayloadReceived the data bytes received, each once;
// WritesDone and ImmsDelivered messages completed. SACKs, ECN echoes,
// CE marks and timeouts are the subflows' (Subflows), and Drops theirs
// plus Drops[verbs.DropMalformed] for data without a usable mapping.
type Stats struct {
	verbs.Stats
	// Subflows sums the subflows' own counters (package tcp's meanings).
	Subflows tcp.Stats
	// Reinjections counts runs sent again on another subflow after a
	// retransmission timeout on the one that carried them.
	Reinjections uint64
}

// add accumulates a connection's data-level counters.
func (s *Stats) add(o *Stats) {
	s.Stats.Add(&o.Stats)
	s.Reinjections += o.Reinjections
}

// fill sets the counters that come from the subflows.
func (s *Stats) fill() {
	f := &s.Subflows
	s.Retransmits = f.Retransmits + s.Reinjections
	s.SACKsSent, s.SACKsReceived, s.ECNEchoes, s.CEReceived = f.SACKsSent, f.SACKsReceived, f.ECNEchoes, f.CEReceived
	s.RetryTimeouts, s.LossTimeouts = f.RetryTimeouts, f.LossTimeouts
	for i, d := range f.Drops {
		s.Drops[i] += d
	}
}
