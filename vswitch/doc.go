// Package vswitch is the data plane of an MRC fabric switch, as pure
// logic over raw packet bytes: forwarding, egress queues with ECN marking,
// trimming and tail drop, an optional lossless (PFC) mode, failure states,
// and counters for everything. The simulator (package sim) drives one
// Switch per fabric switch in virtual time; a software switch over real
// packets can drive the same code with the wall clock.
//
// # Use
//
//	sw, err := vswitch.New(vswitch.Config{Ports: 64, Mode: vswitch.ModeSRv6, Addr: myUSID})
//	sw.AddRoute(prefix, 48, port)                  // static table
//	out, drop := sw.Forward(pkt, inPort)           // rewrites pkt in place
//	v := sw.Enqueue(now, out, inPort, handle, pkt, wireLen)
//	...
//	d, ok := sw.Dequeue(now, out)                  // when port out may send
//
// The switch never holds packet bytes: the caller owns the buffers and
// names each packet by a Handle; queues hold handles and lengths.
// Enqueue may trim the packet in place (the verdict gives its new length)
// and may set its CE mark.
//
// # Forwarding modes (digest §3.4, §3.12)
//
//   - ModeSRv6 (uN, RFC 9800 NEXT-C-SID): when the outer destination's
//     block and active uSID equal the switch's own address, the uSIDs are
//     shifted left by one (wire.USIDFormat.Shift); the destination is then
//     looked up in the static table.
//   - ModeECMP: the destination is looked up (longest prefix) and the
//     next hop chosen from the route's group by a hash of the outer
//     addresses, flow label, next header and, when UDP follows directly,
//     the UDP ports. The hash is seeded per switch.
//   - ModeSTEV (structured EV): as ECMP, but a bit field of the packet's
//     32-bit EV (Config.EVShift, Config.EVBits) indexes the group.
//   - ModeDest (InfiniBand's static routing): as ECMP, but the group is
//     indexed by destination alone, D-mod-k on the destination's LID (the
//     address's last 32 bits, LID), as a subnet manager's linear
//     forwarding table does in a fat tree.
//   - ModeAdaptive (InfiniBand adaptive routing): per packet, the group's
//     least-loaded port that is up.
//
// # Queues (digest §3.10)
//
// Each port has a data queue and a strict-priority header queue. Control
// packets (DSCP Control) and trimmed headers (DSCP Trimmed,
// TrimmedLastHop) go to the header queue. A data packet that finds more
// than TrimAt bytes queued is trimmed to its headers (wire.Trim) with the
// DSCP Trimmed, or TrimmedLastHop on a port marked LastHop, and joins the
// header queue (with TrimTo, cut to TrimTo bytes instead, lengths and
// checksums left stale and only the outermost DSCP rewritten, as
// fixed-size trimming switches do); a packet that cannot be trimmed, a packet with DSCP NoTrim
// (DSCP_NO_TRIM, traffic that must never be trimmed), or any packet when
// trimming is off, is tail-dropped beyond Buffer bytes. ECN marks are set
// at enqueue with a probability rising linearly from 0 at ECNMin queued
// bytes to 1 at ECNMax (RED-style), except on LastHop ports unless
// ECNLastHop is set. In lossless mode nothing is dropped for lack of
// buffer: the switch counts the bytes queued from each ingress port and
// asks its caller to pause that ingress above PFCXoff and to resume it
// below PFCXon. In credit mode (QueueConfig.Credits, InfiniBand's
// link-level flow control; credit.go) nothing is dropped either: a port
// sends only while the far end of its link has credits for the packet,
// per virtual lane (the data queue is VL 0, the header queue VL 1), and
// Dequeue names the ingress port whose credits the caller returns
// upstream.
//
// # Time and concurrency
//
// Time is an mtime.Picos passed in by the caller; the switch
// reads no clock, starts no goroutines and draws randomness (ECN marking)
// from a generator seeded by Config.Seed. A Switch is not safe for
// concurrent use.
package vswitch
