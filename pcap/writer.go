package pcap

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/openmrc/mrc/mtime"
)

// pcapng block types and option codes (draft-ietf-opsawg-pcapng §4, §3.5).
const (
	blockSHB = 0x0A0D0D0A // section header
	blockIDB = 0x00000001 // interface description
	blockPB  = 0x00000002 // packet (obsolete)
	blockSPB = 0x00000003 // simple packet
	blockEPB = 0x00000006 // enhanced packet

	byteOrderMagic = 0x1A2B3C4D

	optEnd         = 0
	optSHBUserAppl = 4
	optIfName      = 2
	optIfDesc      = 3
	optIfTSResol   = 9
	optIfTSOffset  = 14
	optEPBFlags    = 2

	epbFixedLen = 28 // type, length, interface, ts high, ts low, caplen, origlen
	epbFlagsLen = 12 // epb_flags option (8) + opt_endofopt (4)
)

// Options configure a Writer.
type Options struct {
	// Epoch is the wall-clock time of mtime.Time 0; every timestamp is
	// Epoch + t. The zero Epoch writes t as time since 1970-01-01 UTC,
	// which suits a simulation (Wireshark shows relative times anyway). A
	// datapath passes the wall time at which its monotonic clock read 0.
	Epoch time.Time
	// Application names the program in the section header (shb_userappl);
	// default "mrc".
	Application string
}

// Interface describes one capture point of a Writer.
type Interface struct {
	// Name identifies the capture point (if_name), for example
	// "hostA:port0" or "t1.3:eth7". Wireshark shows it as
	// frame.interface_name.
	Name string
	// Description says more (if_description), for example
	// "NIC port 0 of host A, plane 0".
	Description string
	// LinkType is what each packet starts with: LinkEthernet (the
	// default), or LinkIPv6/LinkRaw to record bare datagrams.
	LinkType LinkType
	// Snaplen, if positive, caps the bytes recorded per packet, as
	// tcpdump -s does; the original length is still recorded.
	Snaplen int
	// SrcMAC and DstMAC are the Ethernet addresses of frames that
	// WriteDatagram builds. A zero address is derived from the packet's
	// IPv6 source or destination address: 02 (locally administered) and
	// five bytes of a hash of it, stable across runs.
	SrcMAC, DstMAC [6]byte
}

type ifaceState struct {
	link    LinkType
	snaplen int
	src     [6]byte
	dst     [6]byte
}

// A Writer writes a pcapng capture: a section header, the interfaces
// added, and one enhanced packet block per packet. It buffers; call Flush
// when done. It is not safe for concurrent use.
type Writer struct {
	w       *bufio.Writer
	epochNS int64
	ifaces  []ifaceState
	err     error
	packets uint64
	scratch [epbFixedLen + EthernetLen + 4]byte
	tail    [epbFlagsLen + 4]byte
}

// ErrInterface means a packet named an interface the Writer does not have.
var ErrInterface = errors.New("pcap: no such interface")

// NewWriter writes a pcapng section header to w and returns a Writer that
// appends to it.
func NewWriter(w io.Writer, opt Options) (*Writer, error) {
	pw := &Writer{w: bufio.NewWriterSize(w, 1<<16)}
	if !opt.Epoch.IsZero() {
		pw.epochNS = opt.Epoch.UnixNano()
	}
	app := opt.Application
	if app == "" {
		app = "mrc"
	}
	var body []byte
	body = binary.LittleEndian.AppendUint32(body, byteOrderMagic)
	body = binary.LittleEndian.AppendUint16(body, 1) // major
	body = binary.LittleEndian.AppendUint16(body, 0) // minor
	body = binary.LittleEndian.AppendUint64(body, ^uint64(0))
	body = appendOption(body, optSHBUserAppl, []byte(app))
	body = appendOption(body, optEnd, nil)
	pw.writeBlock(blockSHB, body)
	if pw.err != nil {
		return nil, pw.err
	}
	return pw, nil
}

// AddInterface adds a capture point and returns its number, which
// WriteDatagram and WritePacket take. Interfaces are numbered from 0 in
// the order added.
func (w *Writer) AddInterface(ifc Interface) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if ifc.LinkType == 0 {
		ifc.LinkType = LinkEthernet
	}
	if ifc.Snaplen < 0 || ifc.Snaplen > 1<<30 {
		return 0, fmt.Errorf("pcap: snaplen %d out of range", ifc.Snaplen)
	}
	var body []byte
	body = binary.LittleEndian.AppendUint16(body, uint16(ifc.LinkType))
	body = binary.LittleEndian.AppendUint16(body, 0)
	body = binary.LittleEndian.AppendUint32(body, uint32(ifc.Snaplen))
	if ifc.Name != "" {
		body = appendOption(body, optIfName, []byte(ifc.Name))
	}
	if ifc.Description != "" {
		body = appendOption(body, optIfDesc, []byte(ifc.Description))
	}
	body = appendOption(body, optIfTSResol, []byte{9}) // nanoseconds
	body = appendOption(body, optEnd, nil)
	w.writeBlock(blockIDB, body)
	if w.err != nil {
		return 0, w.err
	}
	w.ifaces = append(w.ifaces, ifaceState{link: ifc.LinkType, snaplen: ifc.Snaplen, src: ifc.SrcMAC, dst: ifc.DstMAC})
	return len(w.ifaces) - 1, nil
}

// WriteDatagram records the MRC datagram pkt, which starts at its
// outermost IP header, as seen on interface ifc at t. wireLen is its
// length on the wire; when it exceeds len(pkt) (a phantom payload) the
// missing bytes are recorded as not captured. On an Ethernet interface
// the datagram is framed with an Ethernet II header (EtherType from the
// IP version) and padded to the 60-byte minimum frame; on a raw interface
// it is recorded as is. It does not allocate.
func (w *Writer) WriteDatagram(ifc int, t mtime.Time, dir Direction, pkt []byte, wireLen int) error {
	if w.err != nil {
		return w.err
	}
	if ifc < 0 || ifc >= len(w.ifaces) {
		return ErrInterface
	}
	st := &w.ifaces[ifc]
	wl := max(wireLen, len(pkt))
	if st.link != LinkEthernet {
		return w.writeEPB(ifc, t, dir, 0, pkt, 0, wl)
	}
	orig := EthernetLen + wl
	pad := 0
	if orig < MinFrameLen {
		pad = MinFrameLen - orig
		orig = MinFrameLen
	}
	capPad := pad
	if wl > len(pkt) {
		capPad = 0 // the end of the frame was not captured
	}
	h := w.scratch[epbFixedLen : epbFixedLen+EthernetLen]
	dst, src := st.dst, st.src
	if dst == [6]byte{} {
		dst = deriveMAC(pkt, true)
	}
	if src == [6]byte{} {
		src = deriveMAC(pkt, false)
	}
	copy(h[0:6], dst[:])
	copy(h[6:12], src[:])
	et := uint16(EtherTypeIPv6)
	if len(pkt) > 0 && pkt[0]>>4 == 4 {
		et = EtherTypeIPv4
	}
	binary.BigEndian.PutUint16(h[12:14], et)
	return w.writeEPB(ifc, t, dir, EthernetLen, pkt, capPad, orig)
}

// WritePacket records data, a packet of the interface's link type, as
// seen on interface ifc at t. origLen is its length on the wire (at
// least len(data)). It does not allocate.
func (w *Writer) WritePacket(ifc int, t mtime.Time, dir Direction, data []byte, origLen int) error {
	if w.err != nil {
		return w.err
	}
	if ifc < 0 || ifc >= len(w.ifaces) {
		return ErrInterface
	}
	return w.writeEPB(ifc, t, dir, 0, data, 0, max(origLen, len(data)))
}

// writeEPB writes an enhanced packet block whose data is the first hdr
// bytes of w.scratch after the fixed part, then body, then pad zero
// bytes; orig is the original length.
func (w *Writer) writeEPB(ifc int, t mtime.Time, dir Direction, hdr int, body []byte, pad, orig int) error {
	st := &w.ifaces[ifc]
	capLen := hdr + len(body) + pad
	if st.snaplen > 0 && capLen > st.snaplen {
		capLen = st.snaplen
	}
	// What of hdr, body and pad fits in capLen.
	nh := min(hdr, capLen)
	nb := min(len(body), capLen-nh)
	np := capLen - nh - nb
	align := -capLen & 3
	opts := 0 // no options unless the direction is known
	if dir != DirUnknown {
		opts = epbFlagsLen
	}
	total := epbFixedLen + capLen + align + opts + 4
	ns := w.epochNS + int64(t)
	if ns < 0 {
		ns = 0
	}
	s := w.scratch[:epbFixedLen]
	binary.LittleEndian.PutUint32(s[0:], blockEPB)
	binary.LittleEndian.PutUint32(s[4:], uint32(total))
	binary.LittleEndian.PutUint32(s[8:], uint32(ifc))
	binary.LittleEndian.PutUint32(s[12:], uint32(uint64(ns)>>32))
	binary.LittleEndian.PutUint32(s[16:], uint32(ns))
	binary.LittleEndian.PutUint32(s[20:], uint32(capLen))
	binary.LittleEndian.PutUint32(s[24:], uint32(orig))
	w.write(w.scratch[:epbFixedLen+nh])
	w.write(body[:nb])
	w.zeros(np + align)
	tl := w.tail[:0]
	if dir != DirUnknown {
		tl = w.tail[:epbFlagsLen]
		binary.LittleEndian.PutUint16(tl[0:], optEPBFlags)
		binary.LittleEndian.PutUint16(tl[2:], 4)
		binary.LittleEndian.PutUint32(tl[4:], uint32(dir)&3)
		binary.LittleEndian.PutUint32(tl[8:], 0) // opt_endofopt
	}
	tl = binary.LittleEndian.AppendUint32(tl, uint32(total))
	w.write(tl)
	if w.err == nil {
		w.packets++
	}
	return w.err
}

// Packets returns how many packets have been written.
func (w *Writer) Packets() uint64 { return w.packets }

// Flush writes any buffered data to the underlying writer.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	w.err = w.w.Flush()
	return w.err
}

func (w *Writer) write(b []byte) {
	if w.err == nil && len(b) > 0 {
		_, w.err = w.w.Write(b)
	}
}

var zeroBytes [64]byte

func (w *Writer) zeros(n int) {
	for n > 0 && w.err == nil {
		k := min(n, len(zeroBytes))
		w.write(zeroBytes[:k])
		n -= k
	}
}

// writeBlock writes a block of type typ with body (already padded).
func (w *Writer) writeBlock(typ uint32, body []byte) {
	total := uint32(12 + len(body))
	var h [8]byte
	binary.LittleEndian.PutUint32(h[0:], typ)
	binary.LittleEndian.PutUint32(h[4:], total)
	w.write(h[:])
	w.write(body)
	binary.LittleEndian.PutUint32(h[0:], total)
	w.write(h[:4])
}

// appendOption appends a pcapng option, padded to 32 bits.
func appendOption(b []byte, code uint16, val []byte) []byte {
	if len(val) > 0xFFFF {
		val = val[:0xFFFF]
	}
	b = binary.LittleEndian.AppendUint16(b, code)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(val)))
	b = append(b, val...)
	return append(b, zeroBytes[:-len(val)&3]...)
}

// deriveMAC returns a locally administered unicast MAC address made from
// the destination (dst) or source address of the IP datagram pkt.
func deriveMAC(pkt []byte, dst bool) [6]byte {
	var a []byte
	switch {
	case len(pkt) >= 40 && pkt[0]>>4 == 6:
		a = pkt[8:24]
		if dst {
			a = pkt[24:40]
		}
	case len(pkt) >= 20 && pkt[0]>>4 == 4:
		a = pkt[12:16]
		if dst {
			a = pkt[16:20]
		}
	}
	// FNV-1a, 64 bits.
	h := uint64(14695981039346656037)
	for _, c := range a {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return [6]byte{0x02, byte(h >> 32), byte(h >> 24), byte(h >> 16), byte(h >> 8), byte(h)}
}
