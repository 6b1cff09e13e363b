package mrc

import "time"

// SmoothedRTT returns the requester's smoothed RTT (tests only).
func (q *QP) SmoothedRTT() time.Duration { return q.tx.srtt }

// ImmSlots returns the size of the responder's table of WRITE_IMMs in
// progress (tests only).
func (q *QP) ImmSlots() int { return len(q.rx.imms) }

// HasCC reports whether the QP has built its congestion controller
// (tests only).
func (q *QP) HasCC() bool { return q.cc != nil }

// WQESlots returns the size of the requester's ring of posted WRITEs
// (tests only).
func (q *QP) WQESlots() int { return len(q.tx.wqes) }
