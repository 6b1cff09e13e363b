package mtime

import (
	"math"
	"time"
)

// Picos is a time in picoseconds: an instant since the host's epoch or a
// span between two. The simulator and the switch count in picoseconds
// because a byte at 800 Gb/s takes 10 ps, finer than the core's
// nanoseconds. Picos and Time never mix implicitly; convert with
// Time.Picos and Picos.Nanos.
type Picos int64

// PicosPerNano is the number of picoseconds in a nanosecond.
const PicosPerNano = 1000

// Picos returns t in picoseconds. A t too late to count in picoseconds
// (Never among them) saturates at the latest Picos.
func (t Time) Picos() Picos {
	if t > math.MaxInt64/PicosPerNano {
		return math.MaxInt64
	}
	return Picos(t) * PicosPerNano
}

// Nanos returns p as the core's nanosecond Time, truncated toward zero.
func (p Picos) Nanos() Time { return Time(p / PicosPerNano) }

// Nanoseconds returns the count of whole nanoseconds in p, truncated
// toward zero, for reports that count in nanoseconds.
func (p Picos) Nanoseconds() int64 { return int64(p / PicosPerNano) }

// PicosOf returns the span d in picoseconds. It does not saturate: d must
// be under about 106 days.
func PicosOf(d time.Duration) Picos { return Picos(d) * PicosPerNano }

// Duration returns the span p as a time.Duration, truncated toward zero
// to whole nanoseconds.
func (p Picos) Duration() time.Duration { return time.Duration(p / PicosPerNano) }
