// Package wire encodes and decodes MRC (Multipath Reliable Connection)
// packets byte for byte: the IPv6, SRv6 and UDP headers that carry them,
// the RoCEv2 Base Transport Header, MRC's extension headers, the UDP
// checksum and the RoCEv2 invariant CRC. It is the one place that knows
// the wire format; the protocol core, the simulator's switches, packet
// captures and the dump tool all use it. It imports only the standard
// library. docs/wire.md has the byte layout of every header, and lists the
// choices we made where the public material is silent.
//
// # Headers
//
// Each header type (BTH, METH, TSETH, RETH, ImmDt, AETH, SACK and its
// CCState, NACK, Probe, EPRequest, EPResponse, IPv6, UDP, SRH) has a length
// constant named after the wire header (BTHLen, SACKLen, NETHLen, PETHLen,
// ERTHLen, EETHLen, …; SRH.Len for the SRH), Append(b []byte) []byte,
// which appends its encoding, and
// Decode(b []byte) (int, error), which fills the value from the start of b
// and returns the bytes consumed. Decoders never panic, never allocate, and
// return the sentinel errors of this package unwrapped (ErrTruncated,
// ErrInvalid, ErrUnsupported). They keep every bit, reserved ones
// included, so a decode/append round trip is byte-exact (the SRH drops its
// TLVs). Appending into a slice with enough capacity does not allocate.
//
// # Packets
//
// Packet holds a whole datagram; Packet.Decode fills it and AppendPacket
// writes it, computing the lengths, pad, UDP checksum and ICRC. Three
// encapsulations round-trip:
//
//	plain         IPv6(NH 17) | UDP | MRC
//	inline uSID   IPv6(Dst = uSID container; NH 17, or 43 → SRH(NH 17)) | UDP | MRC
//	encapsulated  IPv6(Dst = uSID container; NH 41, or 43 → SRH(NH 41)) | IPv6(NH 17) | UDP | MRC
//
// The encapsulated form is MRC's deployed SRv6 mode: the outer destination
// is the path as a uSID container (USIDFormat), which switches shift hop
// by hop, and the inner destination is the NIC. The UDP checksum and the
// ICRC are computed over the header that carries UDP with the final
// destination (Packet.FinalDst), so they hold along the whole path.
//
// Packet.Verify checks both; Packet.VerifyInto also copies a data packet's
// payload out in the same pass. A sender of many data packets writes them
// with a DataTemplate, whose packets are AppendPacket's, byte for byte,
// from a template of the headers patched per packet.
//
// # Phantom payloads
//
// A simulator need not carry payload bytes. When Packet.PayloadLen exceeds
// the payload given to AppendPacket, the headers are written with the
// true lengths but no payload, pad or ICRC follows and the UDP checksum is
// 0. Decode of such a buffer returns the headers, the bytes present as
// Payload, the declared length as PayloadLen, and HasICRC false; missing
// headers are always ErrTruncated. The consumer, which knows whether its
// host carries payloads, decides whether a short datagram is a phantom or
// a truncation.
//
// # Switch operations
//
// Trim cuts a data packet to its headers in place, as a congested switch
// does, rewriting lengths, DSCP and UDP checksum; it works on phantom
// buffers too, and Decode reports the result as Trimmed. OuterDst,
// OuterTrafficClass, SetOuterDSCP, SetOuterECN, MarkCE and DecHopLimit
// read and write the outermost IPv6 header at fixed offsets without
// decoding. Decapsulate strips the outer header at the receiver and
// carries a CE mark inward (RFC 6040).
//
// # Sources
//
// Header layouts follow the digest's §3.2 (docs/mrc-spec-digest.md), a
// reconstruction from secondary sources [S] that must be re-checked
// against the OCP MRC 1.0 specification; IBTA Vol. 1 and Annex A17 for the
// RoCE parts; RFC 8200, 8754, 9800, 768, 1071, 1624, 3168 and 6040 for
// the rest.
package wire
