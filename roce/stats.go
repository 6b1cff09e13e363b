package roce

import (
	"github.com/openmrc/mrc/verbs"
)

// Stats counts everything an endpoint or QP did. All counters only grow.
//
// The embedded mrc.Stats holds the counters whose meaning is the MRC
// core's, so a host reads both transports alike; the mapping (docs/roce.md):
// SACKsSent/SACKsReceived count ACKs, NACKsSent/NACKsReceived NAKs of every
// kind, RetryTimeouts expirations of the local ACK timer, ECNEchoes CNPs
// received; Drops[mrc.DropOutOfWindow] counts data packets dropped for
// arriving ahead of the expected PSN, Drops[mrc.DropNotMRC] packets that
// are not RoCEv2 RC for this endpoint, and Drops[mrc.DropStale] ACKs and
// NAKs about PSNs not outstanding. The per-packet loss timer, trimming,
// probes and EVs do not exist in RoCE; their counters stay 0.
type Stats struct {
	verbs.Stats

	// Requester side.
	GoBacks         uint64 // go-back-N episodes: a NAK, an RNR NAK or a timeout rewound the send point
	GoBackPSNs      uint64 // PSNs rewound over by go-back-N (sent, then to be sent again)
	SeqNAKsReceived uint64 // PSN sequence error NAKs
	RNRNAKsReceived uint64
	CNPsReceived    uint64
	BECNsReceived   uint64 // ACKs carrying BECN (CCBECN)
	RateCuts        uint64 // DCQCN rate decreases, or BECNs that slowed a CCBECN QP
	StaleACKs       uint64 // ACKs and NAKs overtaken by later ones, ignored (ReorderWindow > 0)

	// Responder side.
	OutOfSequence  uint64 // data packets ahead of the expected PSN, dropped (also in Drops)
	SeqNAKsSent    uint64 // PSN sequence error NAKs: one per gap
	RNRNAKsSent    uint64 // WRITE_IMMs that found no posted receive
	FatalNAKsSent  uint64 // invalid request and remote access NAKs
	CNPsSent       uint64
	CNPsSuppressed uint64 // CE-marked packets that found a CNP sent within the CNP interval
	BECNsSent      uint64 // ACKs sent with BECN for CE-marked (FECN) data (CCBECN)
	Reordered      uint64 // data packets taken ahead of the expected PSN and held (ReorderWindow > 0)
	// PayloadArrived counts the payload of new data packets as they
	// arrive, in order or held ahead of the expected PSN, each PSN once.
	// PayloadReceived counts it as it is placed, in PSN order, so a
	// filled gap adds the whole held run to it at one instant.
	PayloadArrived uint64
}

func (s *Stats) add(o *Stats) {
	a, b := &s.Stats, &o.Stats
	a.DataSent += b.DataSent
	a.Retransmits += b.Retransmits
	a.PayloadSent += b.PayloadSent
	a.SACKsReceived += b.SACKsReceived
	a.NACKsReceived += b.NACKsReceived
	a.ECNEchoes += b.ECNEchoes
	a.RetryTimeouts += b.RetryTimeouts
	a.WritesDone += b.WritesDone
	a.DataReceived += b.DataReceived
	a.PayloadReceived += b.PayloadReceived
	a.Duplicates += b.Duplicates
	a.CEReceived += b.CEReceived
	a.SACKsSent += b.SACKsSent
	a.NACKsSent += b.NACKsSent
	a.ImmsDelivered += b.ImmsDelivered
	for i := range a.Drops {
		a.Drops[i] += b.Drops[i]
	}
	s.GoBacks += o.GoBacks
	s.GoBackPSNs += o.GoBackPSNs
	s.SeqNAKsReceived += o.SeqNAKsReceived
	s.RNRNAKsReceived += o.RNRNAKsReceived
	s.CNPsReceived += o.CNPsReceived
	s.BECNsReceived += o.BECNsReceived
	s.StaleACKs += o.StaleACKs
	s.RateCuts += o.RateCuts
	s.OutOfSequence += o.OutOfSequence
	s.SeqNAKsSent += o.SeqNAKsSent
	s.RNRNAKsSent += o.RNRNAKsSent
	s.FatalNAKsSent += o.FatalNAKsSent
	s.CNPsSent += o.CNPsSent
	s.CNPsSuppressed += o.CNPsSuppressed
	s.BECNsSent += o.BECNsSent
	s.Reordered += o.Reordered
	s.PayloadArrived += o.PayloadArrived
}
