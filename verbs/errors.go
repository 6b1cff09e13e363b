package verbs

import "errors"

// Errors returned by the verbs. Callers may branch on them with errors.Is.
var (
	// ErrQPState: the operation is not allowed in the QP's current state
	// (for example posting a WRITE to a QP that is not in RTS).
	ErrQPState = errors.New("mrc: operation not allowed in this QP state")
	// ErrInvalidAttr: a QP or endpoint attribute is out of range.
	ErrInvalidAttr = errors.New("mrc: invalid attribute")
	// ErrBadMR: the memory region key is unknown to this endpoint.
	ErrBadMR = errors.New("mrc: unknown memory region")
	// ErrLocalBounds: the local range of a WRITE lies outside its region.
	ErrLocalBounds = errors.New("mrc: local range outside the memory region")
	// ErrRemoteBounds: the remote range of a WRITE lies outside the remote
	// region the caller named.
	ErrRemoteBounds = errors.New("mrc: remote range outside the remote memory region")
	// ErrQueueFull: the send or receive queue has no room.
	ErrQueueFull = errors.New("mrc: queue full")
	// ErrTooManyQPs: the endpoint has no free QP number.
	ErrTooManyQPs = errors.New("mrc: too many QPs")
	// ErrBadPort: the port index does not exist.
	ErrBadPort = errors.New("mrc: no such port")
	// ErrNoPath: every path of the QP is dead; the QP moved to ERROR after
	// its retry budget ran out.
	ErrNoPath = errors.New("mrc: retry budget exhausted, no path to the peer")
	// ErrRemoteFatal: the peer reported a fatal error (NACK UNEXP_EVENT) or
	// a WRITE_IMM limit violation.
	ErrRemoteFatal = errors.New("mrc: peer reported a fatal error")
	// ErrRemoteAccess: the peer refused a WRITE's memory access (a RoCE
	// NAK remote-access error: an R_Key it does not know, a range
	// outside the region, a region closed to remote writes or of another
	// protection domain).
	ErrRemoteAccess = errors.New("mrc: peer refused the remote memory access")
	// ErrRemoteInvalid: the peer could not execute a WRITE as sent (a
	// RoCE NAK invalid request, e.g. a phantom payload into real memory).
	ErrRemoteInvalid = errors.New("mrc: peer rejected an invalid request")
	// ErrFlushed: the work request was not executed because the QP entered
	// ERROR.
	ErrFlushed = errors.New("mrc: work request flushed")
)
