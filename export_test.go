package mrc

import "time"

// SmoothedRTT returns the requester's smoothed RTT (tests only).
func (q *QP) SmoothedRTT() time.Duration { return q.tx.srtt }
