// Package ib is the InfiniBand baseline MRC is measured against: an RC
// transport over a lossless, credit-based fabric, with InfiniBand's
// congestion control (CCA, IBTA Vol. 1 Annex A10) as an option. It is
// sans-IO like the MRC core: time is passed in, and it starts no
// goroutines and performs no I/O.
//
// InfiniBand's RC transport is the one RoCEv2 carries over UDP, so the
// endpoint is package roce's RC engine (go-back-N, the local ACK timer and
// retry count, RNR NAKs, coalesced ACKs) configured the IB way:
//
//   - no DCQCN; instead, with CC set to CCCCA, a switch port at the root
//     of congestion marks FECN, the responder answers every FECN with an
//     ACK carrying BECN, and the requester's reaction point, CCA, raises
//     the QP's index into the congestion control table (CCT) by
//     CCTIIncrease per BECN and lowers it by one every CCTITimer; the
//     table entry is the inter-packet delay the QP waits after each data
//     packet;
//   - out-of-order reception (Config.ReorderWindow) for adaptive routing,
//     which sends one QP's packets over several paths.
//
// What makes the fabric InfiniBand — credit-based link-level flow control
// per virtual lane, a subnet manager's static D-mod-k routing or adaptive
// routing — is the switches' (package vswitch) and the simulator's
// (package sim, transports ib and ib-ar). The packets on the wire are
// RoCEv2's (IPv6 | UDP | BTH …): FECN travels as the IP header's CE
// codepoint, as RoCEv2 carries it (IBTA Vol. 1 Annex A17), and BECN as
// the BTH's B bit. docs/ib.md lists the parameters, their sources and the
// simplifications.
//
//	ep, err := ib.NewEndpoint(ib.Config{Ports: addrs, CC: ib.CCCCA})
//	q, err := ep.CreateQP()
//	err = ep.Connect(now, q, 0, peerAddr, peerQPN)
//	// then drive it as a roce.Endpoint: PollTransmit, HandleDatagram, …
package ib
