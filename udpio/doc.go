// Package udpio runs the MRC core over UDP sockets: a Driver owns one
// mrc.Endpoint and feeds it the datagrams, timeouts and verbs of the real
// world, and a Bind moves batches of datagrams through the operating
// system's sockets (StdBind) or through memory (package udpiotest).
//
// # Use
//
//	bind, _ := udpio.NewStdBind(udpio.StdConfig{Planes: []netip.AddrPort{a0, a1}})
//	d, _ := udpio.New(bind, mrc.Config{Ports: corePorts}, udpio.Options{OnEvent: handle})
//	defer d.Close()
//	d.AddPeer(udpio.Peer{Ports: peerCorePorts, Sockets: peerSockets})
//	d.Do(func(now mtime.Time, ep *mrc.Endpoint) error { ...create and connect a QP, PostWrite... })
//
// # Framing
//
// In overlay framing (StdBind, the default) every UDP datagram carries one
// whole datagram of the core, from its first IPv6 header to the ICRC, byte
// for byte: the EV in its UDP source port and flow label, its SRv6 headers, its UDP checksum and ICRC all
// arrive as the sending core wrote them, so the receiving core verifies
// them unchanged and no field has to be rebuilt. Around it, the UDP packet
// between the two sockets carries the core's traffic class (DSCP and ECN),
// and, for fabrics that hash on them, the EV's flow-label half in its
// IPv6 flow label (Options.FlowLabels) and a source port drawn from a pool
// by EV (StdConfig.SourcePorts). A CE mark on the outer header is copied
// into the core's header on receipt. docs/udpio.md explains the choice.
//
// Native framing (NativeBind, Linux, CAP_NET_RAW) puts the core's
// packets on the wire as they are instead, through a raw IPv6 socket per
// plane, for real IPv6 and SRv6 fabrics; it receives them on UDP port
// 4791 of the plane's address, after the host's kernel delivered (and in
// SRv6 mode decapsulated) them, and rebuilds their IPv6 and UDP headers
// from the socket's control messages. PathTable holds a node's SRv6
// paths.
//
// The core's port addresses (mrc.Config.Ports, RTRAttr.Remote) name ports
// to the protocol; Peer maps a peer's port addresses to the socket
// addresses that reach them, so any number of endpoints can share one IP.
//
// # Threading
//
// The core is not safe for concurrent use. A Driver runs one goroutine
// (RoutineDriver) that alone calls the endpoint, one receive goroutine per
// socket (RoutineReceive) that hands it batches over a channel, and one
// timer armed at the endpoint's NextTimeout. Before it fires a due timer
// the driver reads its sockets without blocking (PollBind), so that the
// SACKs a descheduled process finds waiting reach the endpoint before its
// loss timers do. Applications reach the
// endpoint through Do, which runs a function in the driver goroutine, and
// through Options.OnEvent, which the driver calls there. Close stops every
// goroutine the driver started before it returns.
//
// # Batching and offload
//
// StdBind uses recvmmsg and sendmmsg on Linux. The driver groups the
// packets of a batch that share a socket, destination, traffic class and
// flow label into Bursts, which StdBind sends as one UDP GSO datagram each;
// received GRO datagrams are split back into packets without copying.
// Reordering within a batch is harmless: MRC places every packet by its
// own address.
package udpio
