package wire

import "errors"

// Sentinel errors. Decoders return them unwrapped, so a failed decode on the
// hot path never allocates; compare with errors.Is or ==.
var (
	// ErrTruncated means the buffer ends before a header does.
	ErrTruncated = errors.New("wire: truncated")
	// ErrInvalid means a field holds a value the format forbids: an IP
	// version other than 6, lengths that disagree with each other, a
	// segment list that does not fit its header, a pad count larger than
	// the room for it.
	ErrInvalid = errors.New("wire: invalid")
	// ErrUnsupported means a well-formed header this package does not
	// handle: an IPv6 next header other than UDP, IPv6 or an SRH, a routing
	// type other than 4, an opcode that is not MRC's.
	ErrUnsupported = errors.New("wire: unsupported")
	// ErrChecksum means the UDP checksum does not match the datagram.
	ErrChecksum = errors.New("wire: bad UDP checksum")
	// ErrICRC means the invariant CRC does not match the datagram.
	ErrICRC = errors.New("wire: bad ICRC")
	// ErrECNDrop means RFC 6040 §4.2 says to drop the packet on
	// decapsulation: the outer header is CE but the inner one is Not-ECT.
	ErrECNDrop = errors.New("wire: CE outer header over Not-ECT inner header")
)
