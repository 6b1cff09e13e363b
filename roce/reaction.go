package roce

import "github.com/openmrc/mrc/mtime"

// Reaction is a QP's congestion reaction point under CCBECN: it decides
// when the QP's next data packet may go and slows the QP down on a
// congestion notification (a BECN). The QP drives it; it must be pure
// (time passed in) and need not be safe for concurrent use. Package ib's
// CCA is one.
type Reaction interface {
	// SendAt returns the earliest time the QP's next data packet may
	// go, asked at now.
	SendAt(now mtime.Time) mtime.Time
	// OnSent records a data packet of wireLen bytes sent at now.
	OnSent(now mtime.Time, wireLen int)
	// OnBECN reacts to a BECN received at now and reports whether it
	// slowed the QP.
	OnBECN(now mtime.Time) bool
	// NextChange returns when SendAt may next move earlier without an
	// input (a recovery timer), or mtime.Never; asked at now.
	NextChange(now mtime.Time) mtime.Time
}
