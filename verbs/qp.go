package verbs

import "fmt"

// QPState is the state of a QP (digest §3.1, the OCP API's lifecycle).
type QPState uint8

const (
	StateReset QPState = iota // created; nothing configured
	StateInit                 // EV and CC profiles bound
	StateRTR                  // ready to receive: the peer is known
	StateRTS                  // ready to send
	StateError                // failed; posted work is flushed
)

func (s QPState) String() string {
	switch s {
	case StateReset:
		return "RESET"
	case StateInit:
		return "INIT"
	case StateRTR:
		return "RTR"
	case StateRTS:
		return "RTS"
	case StateError:
		return "ERROR"
	}
	return fmt.Sprintf("QPState(%d)", uint8(s))
}

// WriteRequest is a posted RDMA WRITE or WRITE_IMM.
type WriteRequest struct {
	ID           uint64 // returned in the completion
	Local        MR     // the local region the bytes come from
	LocalOffset  uint64
	Remote       MR // the peer's region (from its RegisterMemory)
	RemoteOffset uint64
	Length       uint64 // bytes; at most MaxWriteLen
	WithImm      bool   // WRITE_IMM: deliver Imm into a receive posted at the peer
	Imm          uint32
}

// MaxWriteLen is the largest WRITE: the RETH DMA length is 32 bits.
const MaxWriteLen = 1<<31 - 1
