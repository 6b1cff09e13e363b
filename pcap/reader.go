package pcap

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
)

// Classic pcap magic numbers (as read little-endian from the file's first
// four bytes) and limits.
const (
	magicMicro        = 0xA1B2C3D4
	magicNano         = 0xA1B23C4D
	magicMicroSwapped = 0xD4C3B2A1
	magicNanoSwapped  = 0x4D3CB2A1

	// MaxBlockLen bounds a pcapng block or a classic pcap record; larger
	// ones are reported as corrupt rather than read.
	MaxBlockLen = 64 << 20

	maxOffsetSec = 9e9 // |if_tsoffset| beyond this saturates (int64 nanoseconds)
)

// ErrNotCapture means the input starts with neither a pcapng section
// header nor a classic pcap magic number.
var ErrNotCapture = errors.New("pcap: not a pcap or pcapng capture")

// Error is a problem in the capture file itself, at byte Offset.
//
// When Skipped is true the damage was confined to one pcapng block whose
// framing is intact: the block was skipped and Next may be called again.
// Otherwise the Reader cannot go on, and Next keeps returning the error.
type Error struct {
	Offset  int64  // where the block or record starts
	Msg     string // what is wrong
	Skipped bool   // the block was skipped; reading may continue
	Err     error  // the underlying error, if any (io.ErrUnexpectedEOF for a truncated file)
}

func (e *Error) Error() string {
	s := fmt.Sprintf("pcap: at byte %d: %s", e.Offset, e.Msg)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Packet is one captured packet as the Reader returns it.
type Packet struct {
	Interface int      // index of the interface in its section (0 for classic pcap)
	LinkType  LinkType // what Data starts with
	Time      int64    // nanoseconds since 1970-01-01 UTC (for a simulation, Options.Epoch + mtime)
	OrigLen   int      // length on the wire; len(Data) is the captured length
	Dir       Direction
	// Data holds the captured bytes. It aliases the Reader's buffer and
	// is valid until the next call to Next.
	Data []byte
}

// InterfaceInfo describes an interface of the current pcapng section.
type InterfaceInfo struct {
	Name        string
	Description string
	LinkType    LinkType
	Snaplen     int
	// TSResol is the raw if_tsresol value (6, microseconds, by default).
	TSResol uint8

	tsOffsetNS int64
}

// A Reader reads packets from a pcapng or classic pcap capture.
type Reader struct {
	r      *bufio.Reader
	ng     bool
	order  binary.ByteOrder
	off    int64
	buf    []byte
	err    error
	ifaces []InterfaceInfo

	// classic pcap
	nano    bool
	link    LinkType
	snaplen int
}

// NewReader reads the file header of a capture from r: a pcapng section
// header or a classic pcap global header. It returns ErrNotCapture if r
// holds neither.
func NewReader(r io.Reader) (*Reader, error) {
	pr := &Reader{r: bufio.NewReaderSize(r, 1<<16)}
	head, err := pr.r.Peek(4)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, ErrNotCapture
		}
		return nil, err
	}
	switch binary.LittleEndian.Uint32(head) {
	case blockSHB:
		pr.ng = true
		return pr, nil // the SHB is read as the first block
	case magicMicro, magicNano:
		pr.order = binary.LittleEndian
	case magicMicroSwapped, magicNanoSwapped:
		pr.order = binary.BigEndian
	default:
		return nil, ErrNotCapture
	}
	var gh [24]byte
	if _, err := io.ReadFull(pr.r, gh[:]); err != nil {
		return nil, &Error{Offset: 0, Msg: "truncated pcap file header", Err: io.ErrUnexpectedEOF}
	}
	pr.off = 24
	magic := pr.order.Uint32(gh[0:])
	pr.nano = magic == magicNano
	if major := pr.order.Uint16(gh[4:]); major != 2 {
		return nil, &Error{Offset: 0, Msg: fmt.Sprintf("unsupported pcap version %d", major)}
	}
	pr.snaplen = int(pr.order.Uint32(gh[16:]))
	pr.link = LinkType(pr.order.Uint32(gh[20:]) & 0xFFFF)
	pr.ifaces = []InterfaceInfo{{LinkType: pr.link, Snaplen: pr.snaplen, TSResol: 6}}
	if pr.nano {
		pr.ifaces[0].TSResol = 9
	}
	return pr, nil
}

// PcapNG reports whether the capture is pcapng (false: classic pcap).
func (r *Reader) PcapNG() bool { return r.ng }

// Interfaces returns the interfaces of the current section (the single
// pseudo-interface of a classic pcap file).
func (r *Reader) Interfaces() []InterfaceInfo { return slices.Clone(r.ifaces) }

// Interface returns interface i of the current section.
func (r *Reader) Interface(i int) (InterfaceInfo, bool) {
	if i < 0 || i >= len(r.ifaces) {
		return InterfaceInfo{}, false
	}
	return r.ifaces[i], true
}

// Offset returns how many bytes of the capture have been consumed.
func (r *Reader) Offset() int64 { return r.off }

// Next returns the next packet. It returns io.EOF at the end of a
// well-formed capture, and an *Error for a damaged one: with Skipped set
// it may be called again, otherwise the error is final.
func (r *Reader) Next() (Packet, error) {
	if r.err != nil {
		return Packet{}, r.err
	}
	var p Packet
	var err error
	if r.ng {
		p, err = r.nextNG()
	} else {
		p, err = r.nextClassic()
	}
	if err != nil {
		var e *Error
		if !errors.As(err, &e) || !e.Skipped {
			r.err = err
		}
	}
	return p, err
}

// readN reads exactly n bytes into the reader's buffer. It grows the
// buffer as data arrives, so a corrupt length does not allocate more
// than the input holds.
func (r *Reader) readN(n int) ([]byte, error) {
	r.buf = r.buf[:0]
	for len(r.buf) < n {
		chunk := min(n-len(r.buf), 1<<20)
		r.buf = slices.Grow(r.buf, chunk)
		m, err := io.ReadFull(r.r, r.buf[len(r.buf):len(r.buf)+chunk])
		r.buf = r.buf[:len(r.buf)+m]
		r.off += int64(m)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return r.buf, err
		}
	}
	return r.buf, nil
}

func (r *Reader) nextClassic() (Packet, error) {
	start := r.off
	var h [16]byte
	n, err := io.ReadFull(r.r, h[:])
	r.off += int64(n)
	if err == io.EOF {
		return Packet{}, io.EOF
	}
	if err != nil {
		return Packet{}, &Error{Offset: start, Msg: "truncated record header", Err: io.ErrUnexpectedEOF}
	}
	o := r.order
	sec, frac := uint64(o.Uint32(h[0:])), uint64(o.Uint32(h[4:]))
	capLen, origLen := o.Uint32(h[8:]), o.Uint32(h[12:])
	if capLen > MaxBlockLen {
		return Packet{}, &Error{Offset: start, Msg: fmt.Sprintf("captured length %d is not plausible", capLen)}
	}
	data, err := r.readN(int(capLen))
	if err != nil {
		return Packet{}, &Error{Offset: start, Msg: fmt.Sprintf("record of %d bytes cut short after %d", capLen, len(data)), Err: err}
	}
	if !r.nano {
		frac *= 1000
	}
	return Packet{
		LinkType: r.link,
		Time:     satAdd(satMul(sec, 1e9), frac),
		OrigLen:  max(int(origLen), int(capLen)),
		Data:     data,
	}, nil
}

func (r *Reader) nextNG() (Packet, error) {
	for {
		start := r.off
		var h [12]byte
		n, err := io.ReadFull(r.r, h[:8])
		r.off += int64(n)
		if err == io.EOF {
			return Packet{}, io.EOF
		}
		if err != nil {
			return Packet{}, &Error{Offset: start, Msg: "truncated block header", Err: io.ErrUnexpectedEOF}
		}
		typ := binary.LittleEndian.Uint32(h[0:]) // SHB's type is a palindrome
		if typ == blockSHB {
			n, err := io.ReadFull(r.r, h[8:12])
			r.off += int64(n)
			if err != nil {
				return Packet{}, &Error{Offset: start, Msg: "truncated section header", Err: io.ErrUnexpectedEOF}
			}
			switch binary.LittleEndian.Uint32(h[8:]) {
			case byteOrderMagic:
				r.order = binary.LittleEndian
			case 0x4D3C2B1A:
				r.order = binary.BigEndian
			default:
				return Packet{}, &Error{Offset: start, Msg: "section header with a bad byte-order magic"}
			}
		} else if r.order == nil {
			return Packet{}, &Error{Offset: start, Msg: "block before the first section header"}
		} else {
			typ = r.order.Uint32(h[0:])
		}
		blen := r.order.Uint32(h[4:])
		minLen := uint32(12)
		if typ == blockSHB {
			minLen = 28
		}
		if blen < minLen || blen%4 != 0 || blen > MaxBlockLen {
			return Packet{}, &Error{Offset: start, Msg: fmt.Sprintf("block type %#x has an impossible length %d", typ, blen)}
		}
		read := 8
		if typ == blockSHB {
			read = 12
		}
		rest, err := r.readN(int(blen) - read)
		if err != nil {
			return Packet{}, &Error{Offset: start, Msg: fmt.Sprintf("block of %d bytes cut short", blen), Err: err}
		}
		if trail := r.order.Uint32(rest[len(rest)-4:]); trail != blen {
			return Packet{}, &Error{Offset: start, Msg: fmt.Sprintf("block length %d does not match its trailer %d", blen, trail)}
		}
		body := rest[:len(rest)-4] // after type and length (and, for the SHB, the magic)
		switch typ {
		case blockSHB:
			if err := r.section(start, body); err != nil {
				return Packet{}, err
			}
		case blockIDB:
			if len(body) < 8 {
				return Packet{}, &Error{Offset: start, Msg: "interface description block too short", Skipped: true}
			}
			ifc := InterfaceInfo{
				LinkType: LinkType(r.order.Uint16(body[0:])),
				Snaplen:  int(r.order.Uint32(body[4:])),
				TSResol:  6,
			}
			r.options(body[8:], func(code uint16, v []byte) {
				switch code {
				case optIfName:
					ifc.Name = string(v)
				case optIfDesc:
					ifc.Description = string(v)
				case optIfTSResol:
					if len(v) >= 1 {
						ifc.TSResol = v[0]
					}
				case optIfTSOffset:
					if len(v) >= 8 {
						sec := max(min(int64(r.order.Uint64(v)), maxOffsetSec), -maxOffsetSec)
						ifc.tsOffsetNS = sec * 1e9
					}
				}
			})
			r.ifaces = append(r.ifaces, ifc)
		case blockEPB, blockPB:
			return r.packetBlock(start, typ, body)
		case blockSPB:
			if len(r.ifaces) == 0 {
				return Packet{}, &Error{Offset: start, Msg: "simple packet block without an interface", Skipped: true}
			}
			if len(body) < 4 {
				return Packet{}, &Error{Offset: start, Msg: "simple packet block too short", Skipped: true}
			}
			orig := r.order.Uint32(body[0:])
			data := body[4:]
			capLen := min(uint32(len(data)), orig)
			if s := r.ifaces[0].Snaplen; s > 0 && int(capLen) > s {
				capLen = uint32(s)
			}
			return Packet{LinkType: r.ifaces[0].LinkType, OrigLen: int(orig), Data: data[:capLen]}, nil
		}
		// Other blocks (name resolution, statistics, custom, ...) are skipped.
	}
}

// section starts a new section from the body of its header block (after
// the byte-order magic).
func (r *Reader) section(start int64, body []byte) error {
	if len(body) < 12 {
		return &Error{Offset: start, Msg: "section header too short"}
	}
	if major := r.order.Uint16(body[0:]); major != 1 {
		return &Error{Offset: start, Msg: fmt.Sprintf("unsupported pcapng version %d", major)}
	}
	r.ifaces = r.ifaces[:0]
	return nil
}

func (r *Reader) packetBlock(start int64, typ uint32, body []byte) (Packet, error) {
	// EPB: interface (32 bits); obsolete PB: interface and drops (16 each).
	if len(body) < 20 {
		return Packet{}, &Error{Offset: start, Msg: "packet block too short", Skipped: true}
	}
	ifc := int(r.order.Uint32(body[0:]))
	if typ == blockPB {
		ifc = int(r.order.Uint16(body[0:]))
	}
	const hdr = 4
	hi, lo := uint64(r.order.Uint32(body[hdr:])), uint64(r.order.Uint32(body[hdr+4:]))
	capLen, orig := r.order.Uint32(body[hdr+8:]), r.order.Uint32(body[hdr+12:])
	data := body[hdr+16:]
	if ifc >= len(r.ifaces) {
		return Packet{}, &Error{Offset: start, Msg: fmt.Sprintf("packet on interface %d, which was not described", ifc), Skipped: true}
	}
	if uint64(capLen) > uint64(len(data)) {
		return Packet{}, &Error{Offset: start, Msg: fmt.Sprintf("captured length %d exceeds the block's %d bytes of data", capLen, len(data)), Skipped: true}
	}
	p := Packet{
		Interface: ifc,
		LinkType:  r.ifaces[ifc].LinkType,
		Time:      r.ifaces[ifc].ns(hi<<32 | lo),
		OrigLen:   max(int(orig), int(capLen)),
		Data:      data[:capLen],
	}
	optOff := (int(capLen) + 3) &^ 3
	if typ == blockEPB && optOff < len(data) {
		r.options(data[optOff:], func(code uint16, v []byte) {
			if code == optEPBFlags && len(v) >= 4 {
				p.Dir = Direction(r.order.Uint32(v) & 3)
			}
		})
	}
	return p, nil
}

// options calls f for each option in b, stopping at opt_endofopt or at
// the first option that does not fit.
func (r *Reader) options(b []byte, f func(code uint16, v []byte)) {
	for len(b) >= 4 {
		code, n := r.order.Uint16(b[0:]), int(r.order.Uint16(b[2:]))
		if code == optEnd || 4+n > len(b) {
			return
		}
		f(code, b[4:4+n])
		adv := 4 + (n+3)&^3
		if adv > len(b) {
			return
		}
		b = b[adv:]
	}
}

// ns converts a timestamp in the interface's units to nanoseconds since
// the epoch, saturating.
func (ifc *InterfaceInfo) ns(ts uint64) int64 {
	v := ifc.TSResol
	var ns uint64
	if v&0x80 == 0 {
		switch {
		case v <= 9:
			ns = satMul(ts, pow10(9-v))
		case v-9 <= 19:
			ns = ts / pow10(v-9)
		}
	} else {
		e := uint(v & 0x7F)
		hi, lo := bits.Mul64(ts, 1e9)
		switch {
		case e == 0:
			if hi == 0 {
				ns = lo
			} else {
				ns = math.MaxInt64
			}
		case e < 64:
			if hi>>e != 0 {
				ns = math.MaxInt64
			} else {
				ns = hi<<(64-e) | lo>>e
			}
		case e < 128:
			ns = hi >> (e - 64)
		}
	}
	if ns > math.MaxInt64 {
		ns = math.MaxInt64
	}
	t := int64(ns)
	if off := ifc.tsOffsetNS; off > 0 && t > math.MaxInt64-off {
		return math.MaxInt64
	}
	return max(t+ifc.tsOffsetNS, 0)
}

func pow10(n uint8) uint64 {
	p := uint64(1)
	for range n {
		p *= 10
	}
	return p
}

// satMul returns a*b, or math.MaxInt64 if that overflows int64.
func satMul(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return lo
}

// satAdd returns a+b as an int64, saturating.
func satAdd(a, b uint64) int64 {
	s := a + b
	if s < a || s > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(s)
}
