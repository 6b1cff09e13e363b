// Package roce is a sans-IO RoCEv2 Reliable Connection endpoint: the
// baseline MRC is measured against (digest §4–5). Its entry point,
// Endpoint, has the MRC core's host-facing method set, so the simulator
// and the tests drive either transport with the same loop.
//
// # The I/O contract
//
// As the MRC core (package mrc), the endpoint performs no I/O, starts no
// goroutines, reads no clock and uses no global randomness:
//
//   - Inputs: HandleDatagram(now, port, pkt, wireLen), HandleTimeout(now),
//     and the verbs: RegisterMemory/RegisterPhantom, CreateQP,
//     QP.Connect, QP.PostWrite, QP.PostRecv, SetPortUp.
//   - Outputs: PollTransmit(now, free, buf) writes the next packet for a
//     free port; PollEvent returns mrc.EventWriteDone, mrc.EventRecvImm
//     and mrc.EventQPError; NextTimeout returns the next deadline,
//     including the time a paced QP may send again.
//
// Time is an mtime.Time chosen by the host; randomness (each QP's UDP
// source port and flow label, which fix its ECMP path) comes from
// Config.Seed. The driving loop is the MRC core's:
//
//	for {
//		for { // drain what the endpoint may send now
//			tx, ok := ep.PollTransmit(now, freePorts, buf)
//			if !ok { break }
//			send(tx.Port, buf[:tx.Len], tx.WireLen)
//		}
//		for ev, ok := ep.PollEvent(); ok; ev, ok = ep.PollEvent() {
//			handle(ev)
//		}
//		wait until a packet arrives or ep.NextTimeout() passes, then call
//		ep.HandleDatagram(now, port, pkt, wireLen) or ep.HandleTimeout(now)
//	}
//
// # What is modelled
//
// RDMA WRITE and WRITE with immediate over RC (IBTA Vol. 1 §9 with the
// RoCEv2 encapsulation of Annex A17): the standard opcodes, with a RETH in
// a message's first (or only) packet and the ImmDt in its last; one QP on
// one port and one UDP source port and flow label for its whole life;
// in-order PSNs; a responder that accepts only the expected PSN, sends one
// PSN-sequence-error NAK per gap and drops the rest; coalesced ACKs;
// go-back-N at the requester from the NAKed PSN or, on the local ACK
// timeout, from the oldest unacknowledged one; the retry count (then
// ERROR with mrc.ErrNoPath); RNR NAKs for WRITE_IMMs that find no posted
// receive; DCQCN congestion control (notification point: CNPs at most
// once per interval per QP; reaction point: DCQCN) with a per-QP rate
// pacer, or none, or InfiniBand's notification (CCBECN: an ACK with the
// BECN bit for every CE-marked packet) with a reaction point supplied by
// the host (package ib's CCA). A QP may accept packets ahead of the
// expected PSN and take them in order once the gap fills
// (ConnectAttr.ReorderWindow), as RC needs under per-packet adaptive
// routing. Data packets are ECN-capable. Lossless operation (PFC)
// is the fabric's business: the transport behaves correctly with and
// without drops. docs/roce.md lists the parameter defaults with their
// sources and the differences from real NICs.
//
// Packets are plain IPv6 | UDP | BTH | ... built with package wire's
// header types, UDP checksum and ICRC, so a fabric that forwards MRC
// packets by their IPv6 and UDP headers forwards these unchanged. Package
// wire's Packet does not decode RoCE opcodes; this package's Packet does.
package roce
