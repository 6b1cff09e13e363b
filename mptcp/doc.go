// Package mptcp is a sans-IO Multipath TCP endpoint (RFC 8684) over
// IPv6: the MPTCP baseline MRC is measured against. A connection is one
// byte stream each way carried by several TCP subflows (8 by default),
// each with its own 5-tuple (its own source port, and its own NIC port
// when the host has several), so an ECMP fabric hashes each onto its own
// path. Its entry point, Endpoint, has the MRC core's host-facing method
// set, so the simulator drives it with the same loop as packages mrc,
// roce and tcp.
//
// # The I/O contract
//
// The endpoint performs no I/O, starts no goroutines, reads no clock and
// uses no global randomness. Inputs: HandleDatagram(now, port, pkt,
// wireLen), HandleTimeout(now), CreateConn, Conn.Connect,
// Conn.PostWrite, Conn.PostRecv, SetPortUp. Outputs: PollTransmit(now,
// free, buf) writes the next segment of any subflow; PollEvent returns
// verbs.EventWriteDone (every byte of a posted message acknowledged at
// the data level) and verbs.EventRecvImm (a message received whole and in
// order in the data stream); NextTimeout returns the subflows' earliest
// timer.
//
// # What is modelled
//
// Each subflow is a connection of package tcp (tcp.Owner): segments,
// SACK, delayed ACKs, RACK-TLP, loss recovery, the retransmission timer
// and slow start are TCP's (a subflow's segments count as pushed: when
// the data level holds nothing out of order, every subflow sends the ACK
// it is delaying). On top of them: the data sequence (every segment carries a
// DSS option with a 64-bit data ACK and the mapping of its payload to
// 64-bit data sequence numbers, RFC 8684 §3.3); a scheduler that hands
// each run of data (at most an MSS, never across a message's end) to
// the subflow with the lowest smoothed RTT whose window has room for it,
// passing over subflows recovering from a timeout (the default scheduler
// of the multipath-tcp.org Linux kernel); reinjection, on a subflow's
// retransmission timeout, of the data it holds that is not yet
// data-acked onto the other subflows, the receiver keeping whichever copy
// arrives first; and coupled congestion control in congestion avoidance:
// LIA (RFC 6356, the default), OLIA (Khalili et al., CoNEXT 2012) or
// none (uncoupled NewReno per subflow).
//
// Not modelled: the handshake (MP_CAPABLE, MP_JOIN: subflows start
// established, set up out of band as QPs are, with their keys, tokens
// and IDSNs taken as zero), address signalling (ADD_ADDR) and teardown
// (DATA_FIN, MP_FASTCLOSE), the DSS checksum (off by default in Linux,
// net.mptcp.checksum_enabled = 0), the connection-level receive window
// (the receiver always has room) and so the scheduler's
// receive-buffer optimisations (opportunistic retransmission and
// penalisation), and the connection-level retransmission timer. Payload
// bytes are phantom, as in package tcp. docs/mptcp.md lists the
// parameters, their defaults and their sources.
package mptcp
