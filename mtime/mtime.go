// Package mtime is the only notion of time in the MRC protocol core: a
// monotonic instant in nanoseconds that the host passes in. The core never
// reads a clock; a simulator passes virtual time and a datapath passes the
// monotonic clock, and both drive the same code. Picos is the finer time
// of the switch and the simulator, converted to and from Time explicitly.
package mtime

import (
	"math"
	"time"
)

// Time is an instant in nanoseconds since an epoch the host chooses. Only
// differences between two Times of the same host are meaningful.
type Time int64

// Never is a Time later than any real one; a deadline of Never is no deadline.
const Never Time = math.MaxInt64

// Add returns t+d. It saturates at Never instead of wrapping.
func (t Time) Add(d time.Duration) Time {
	if d > 0 && t > Never-Time(d) {
		return Never
	}
	return t + Time(d)
}

// Sub returns the duration t-u.
func (t Time) Sub(u Time) time.Duration { return time.Duration(t - u) }

// Before reports whether t is earlier than u.
func (t Time) Before(u Time) bool { return t < u }

// After reports whether t is later than u.
func (t Time) After(u Time) bool { return t > u }

// Min returns the earlier of t and u.
func Min(t, u Time) Time {
	if u < t {
		return u
	}
	return t
}

// String formats t as a duration since the epoch, for traces and tests.
func (t Time) String() string {
	if t == Never {
		return "never"
	}
	return time.Duration(t).String()
}
