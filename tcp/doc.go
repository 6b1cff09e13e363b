// Package tcp is a sans-IO TCP endpoint over IPv6: the TCP and DCTCP
// baselines MRC is measured against. A connection is one byte stream
// each way on one port and one 5-tuple, so an ECMP fabric hashes it onto
// one path for its whole life. Its entry point, Endpoint, has the MRC
// core's host-facing method set, so the simulator drives it with the
// same loop as packages mrc and roce.
//
// # The I/O contract
//
// The endpoint performs no I/O, starts no goroutines, reads no clock and
// uses no global randomness. Inputs: HandleDatagram(now, port, pkt,
// wireLen), HandleTimeout(now), CreateConn, Conn.Connect, Conn.PostWrite,
// Conn.PostRecv, SetPortUp. Outputs: PollTransmit(now, free, buf) writes
// the next segment for a free port; PollEvent returns
// verbs.EventWriteDone (every byte of a posted message acknowledged) and
// verbs.EventRecvImm (a message received in order); NextTimeout returns
// the earliest retransmission, probe or delayed-ACK deadline.
//
// # What is modelled
//
// Segments of at most MSS bytes, never across a message's end (the last
// carries PSH, which is how the receiver finds message ends); cumulative
// ACKs with SACK (RFC 2018), delayed as Linux delays them (RFC 5681 §4.2:
// one per two full segments, at once for data out of order, a hole
// filled, a message end or a DCTCP CE-state change, otherwise within a
// 40 ms timer); loss detection by SACK (RFC 6675: a segment with
// DupThresh SACKed segments above it is lost), by DupThresh duplicate
// ACKs (RFC 5681 fast retransmit), of a retransmission once DupThresh
// segments' worth of data sent after it is SACKed, and by RACK-TLP (RFC
// 8985: by send time, with a tail loss probe; on by default, as in
// Linux); one window halving per loss episode (NewReno's recovery, RFC
// 6582, with RFC 6675's pipe); the retransmission timer of RFC 6298 with
// a configurable minimum (Linux's 200 ms by default), exponential backoff
// and a window of one segment after it; slow start and congestion
// avoidance (RFC 5681, RFC 3465's L = 2). The DCTCP variant (RFC 8257)
// marks its segments ECT(0), its receiver echoes CE exactly in ECE (RFC
// 8257 §3.2's state machine: an ACK never covers segments of both CE
// states), and its sender keeps
// alpha = (1−g)·alpha + g·F once per window of data and cuts cwnd to
// cwnd·(1−alpha/2) at most once per window of data.
//
// Not modelled: the handshake and teardown (connections start
// ESTABLISHED, set up out of band as QPs are), the receive window (the
// receiver always has room), Nagle, timestamps, window scaling, pacing,
// RACK's adaptive reordering window. Payload bytes are phantom: a
// segment's buffer holds its headers, its wire length counts the
// payload, and its checksum is that of a zero-filled payload, so
// captures decode as TCP. docs/tcp.md lists the parameters, their
// defaults and their sources.
package tcp
