// Package pcap writes and reads packet captures of MRC traffic, so that
// every packet the simulator or the datapath handles can be opened in
// Wireshark, tshark, tcpdump or `mrc dump`.
//
// # Format
//
// The Writer writes pcapng (draft-ietf-opsawg-pcapng), not classic pcap:
//
//   - One file holds several capture points. Each is an interface with a
//     name ("hostA:port0", "t1.3:eth7", "flow qp 0x12"), so a simulation
//     that captures at a host NIC port, a switch port and a flow at once
//     writes one file, and Wireshark shows which point saw each packet
//     (frame.interface_name). Classic pcap has one link per file and no
//     names.
//   - Timestamps are nanoseconds (if_tsresol = 9), the unit of mtime.Time,
//     with 64 bits of range. Classic pcap needs a separate magic for
//     nanoseconds and has 32-bit seconds.
//   - Each packet can carry its direction (inbound or outbound, epb_flags),
//     which a capture at a port that sees both ways needs.
//   - Every tool that matters reads it: Wireshark and tshark (their native
//     format), tcpdump and libpcap since 1.1, and this package's Reader.
//
// The Reader reads both pcapng (either byte order, any timestamp
// resolution, several sections and interfaces) and classic pcap
// (microsecond and nanosecond, either byte order), so `mrc dump` also
// opens what tcpdump wrote on a datapath host.
//
// # Frames
//
// WriteDatagram takes what the MRC core and the wire package produce, a
// datagram starting at its (outermost) IPv6 header, and records it as a
// complete Ethernet frame: Ethernet | IPv6 (uSID destination, optional
// SRH, optional inner IPv6) | UDP | BTH | extension headers | payload |
// pad | ICRC, exactly the bytes given. A trimmed packet is recorded as the
// short datagram it is. A phantom payload (a simulation's wireLen larger
// than the bytes it holds) is recorded with a captured length shorter than
// the original length, which Wireshark shows as "packet size limited
// during capture" and `mrc dump` as payload not captured.
//
// Writing does not allocate: WriteDatagram and WritePacket copy into a
// buffered writer, so a simulation can capture every packet it moves.
// A Writer is not safe for concurrent use; a host with several goroutines
// serializes its calls.
package pcap
