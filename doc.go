// Package mrc is a sans-IO implementation of the MRC (Multipath Reliable
// Connection) transport: the endpoint behaviour of an MRC NIC, as a pure
// state machine that the simulator, the UDP datapath and the tests all drive.
//
// # The I/O contract
//
// The core performs no I/O, starts no goroutines, reads no clock and uses no
// global randomness. Everything comes in as a call and goes out as a value:
//
//   - Inputs: HandleDatagram(now, port, pkt, wireLen) for every packet a NIC
//     port receives, HandleTimeout(now) when the deadline from NextTimeout
//     passes, and the verbs: RegisterMemory, CreateQP and the QP transitions,
//     PostWrite, PostRecv, SetPortUp.
//   - Outputs: PollTransmit(now, ports, buf) fills buf with the next packet
//     to send on one of the free ports; PollEvent returns completions, QP
//     errors and EV state changes; NextTimeout returns the next deadline.
//
// Time is an mtime.Time in nanoseconds chosen by the host; randomness comes
// from Config.Seed. An Endpoint's behaviour is a function of its inputs, so a
// simulation is reproducible bit for bit.
//
// # Driving an endpoint
//
//	for {
//		for { // drain everything the endpoint wants to send
//			tx, ok := ep.PollTransmit(now, freePorts, buf)
//			if !ok { break }
//			send(tx.Port, tx.Dst, buf[:tx.Len]) // tx also says the EV and traffic class
//		}
//		for ev, ok := ep.PollEvent(); ok; ev, ok = ep.PollEvent() {
//			handle(ev)
//		}
//		wait until a packet arrives or ep.NextTimeout() passes, then call
//		ep.HandleDatagram(now, port, pkt, len(pkt)) or ep.HandleTimeout(now)
//	}
//
// PollTransmit's answer can change after any input; NextTimeout's after any
// input or PollTransmit. Calling HandleTimeout early or twice is harmless.
//
// # What is implemented
//
// RDMA WRITE and WRITE_IMM with a full RETH in every packet and out-of-order
// placement (digest §3.1); per-packet spraying over 128–256 EVs split across
// planes with GOOD/SKIP/ASSUMED_BAD/DENIED path states, backup EVs and
// reliability probes (§3.4–3.5); SACK/NACK generation and selective
// retransmission (§3.6–3.7); per-packet loss timers and the QP timeout/retry
// backstop; UET NSCC congestion control (§3.8, package cc); port status
// signalling. Where the public material is silent, the choice is a named
// config default listed in docs/spec-gaps.md.
package mrc
