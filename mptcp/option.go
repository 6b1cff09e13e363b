package mptcp

import (
	"encoding/binary"

	"github.com/openmrc/mrc/wire"
)

// OptionKind is the TCP option kind of Multipath TCP (RFC 8684 §3, IANA).
const OptionKind = 30

// SubtypeDSS is the MPTCP option subtype of the Data Sequence Signal
// (RFC 8684 §3.3).
const SubtypeDSS = 2

// DSS flags (RFC 8684 §3.3, Figure 9): the low five bits of the option's
// fourth byte.
const (
	flagA       = 0x01 // Data ACK present
	flaga       = 0x02 // Data ACK is 8 octets
	flagM       = 0x04 // DSN, subflow sequence number, data-level length (and checksum) present
	flagm       = 0x08 // DSN is 8 octets
	flagDataFIN = 0x10 // F: DATA_FIN
)

// MaxDSSLen is the longest DSS option: 8-octet data ACK and DSN,
// subflow sequence number, data-level length and checksum.
const MaxDSSLen = 4 + 8 + 8 + 4 + 2 + 2

// DSS is a Data Sequence Signal option (RFC 8684 §3.3): a data-level
// acknowledgment, a mapping of subflow bytes to the data sequence, or
// both. Values of 4 octets on the wire hold the low 32 bits of the
// 64-bit number; the receiver widens them (RFC 8684 §3.3.1).
type DSS struct {
	// HasACK says DataACK is present; ACK64 that it is 8 octets.
	HasACK, ACK64 bool
	// DataACK is the next data sequence number the sender expects.
	DataACK uint64
	// HasMap says DSN, SSN and Length (and, if HasChecksum, Checksum)
	// are present; DSN64 that the DSN is 8 octets.
	HasMap, DSN64 bool
	// The mapping: Length bytes from subflow sequence number SSN
	// (relative to the subflow's initial sequence number) are the data
	// from DSN on.
	DSN    uint64
	SSN    uint32
	Length uint16
	// HasChecksum says the mapping carries the DSS checksum (negotiated
	// at the handshake; this transport never sends it).
	HasChecksum bool
	Checksum    uint16
	// DataFIN is the F flag: the data stream ends (RFC 8684 §3.3.3).
	DataFIN bool
}

// Len returns the encoded length of d.
func (d *DSS) Len() int {
	n := 4
	if d.HasACK {
		n += 4
		if d.ACK64 {
			n += 4
		}
	}
	if d.HasMap {
		n += 4 + 4 + 2
		if d.DSN64 {
			n += 4
		}
		if d.HasChecksum {
			n += 2
		}
	}
	return n
}

// Append appends the option (kind, length, subtype, flags and fields) to
// b.
func (d *DSS) Append(b []byte) []byte {
	n := d.Len()
	var flags byte
	if d.DataFIN {
		flags |= flagDataFIN
	}
	b = append(b, OptionKind, byte(n), SubtypeDSS<<4, 0)
	if d.HasACK {
		flags |= flagA
		if d.ACK64 {
			flags |= flaga
			b = binary.BigEndian.AppendUint64(b, d.DataACK)
		} else {
			b = binary.BigEndian.AppendUint32(b, uint32(d.DataACK))
		}
	}
	if d.HasMap {
		flags |= flagM
		if d.DSN64 {
			flags |= flagm
			b = binary.BigEndian.AppendUint64(b, d.DSN)
		} else {
			b = binary.BigEndian.AppendUint32(b, uint32(d.DSN))
		}
		b = binary.BigEndian.AppendUint32(b, d.SSN)
		b = binary.BigEndian.AppendUint16(b, d.Length)
		if d.HasChecksum {
			b = binary.BigEndian.AppendUint16(b, d.Checksum)
		}
	}
	b[len(b)-n+3] = flags
	return b
}

// Decode decodes a DSS option from o, a whole MPTCP option (kind, length
// and the rest, as tcp.Header.MPTCP holds it). It returns wire.ErrTruncated
// if o is shorter than its length byte says, and wire.ErrInvalid if o is
// not an MPTCP DSS option or its length does not match its flags (a
// mapping's checksum is told from the length, since its presence was
// negotiated at the handshake).
func (d *DSS) Decode(o []byte) error {
	if len(o) < 4 {
		return wire.ErrTruncated
	}
	n := int(o[1])
	switch {
	case o[0] != OptionKind || o[2]>>4 != SubtypeDSS:
		return wire.ErrInvalid
	case n > len(o):
		return wire.ErrTruncated
	}
	f := o[3]
	*d = DSS{HasACK: f&flagA != 0, ACK64: f&flaga != 0, HasMap: f&flagM != 0, DSN64: f&flagm != 0, DataFIN: f&flagDataFIN != 0}
	if !d.HasACK {
		d.ACK64 = false
	}
	if !d.HasMap {
		d.DSN64 = false
	}
	switch l := d.Len(); {
	case d.HasMap && n == l+2:
		d.HasChecksum = true
	case n != l:
		return wire.ErrInvalid
	}
	p := o[4:n]
	if d.HasACK {
		if d.ACK64 {
			d.DataACK, p = binary.BigEndian.Uint64(p), p[8:]
		} else {
			d.DataACK, p = uint64(binary.BigEndian.Uint32(p)), p[4:]
		}
	}
	if d.HasMap {
		if d.DSN64 {
			d.DSN, p = binary.BigEndian.Uint64(p), p[8:]
		} else {
			d.DSN, p = uint64(binary.BigEndian.Uint32(p)), p[4:]
		}
		d.SSN = binary.BigEndian.Uint32(p)
		d.Length = binary.BigEndian.Uint16(p[4:])
		if d.HasChecksum {
			d.Checksum = binary.BigEndian.Uint16(p[6:])
		}
	}
	return nil
}

// widen returns the 64-bit number nearest ref whose low 32 bits are v,
// or v itself if wide (RFC 8684 §3.3.1: a 4-octet DSN or data ACK is
// the low half of the 64-bit number).
func widen(v uint64, wide bool, ref uint64) uint64 {
	if wide {
		return v
	}
	w := ref + uint64(int64(int32(uint32(v)-uint32(ref))))
	if int64(w) < 0 && int64(ref) >= 0 && ref < 1<<31 {
		return v // below zero: take the number as it is
	}
	return w
}
