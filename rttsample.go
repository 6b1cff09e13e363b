package mrc

import (
	"math"
	"time"

	"github.com/openmrc/mrc/mtime"
)

// RTT samples of retransmitted packets (docs/spec-gaps.md row 40). A SACK
// names the PSN that triggered it, not which of its transmissions; the
// requester times only the latest, so a sample is valid only when no
// earlier transmission can have been the trigger. UET's rule, (rtx_count
// == 0 && !Retx_Flag) || (rtx_count == 1 && Retx_Flag), generalises to
// what the requester knows of each earlier copy:
//   - a copy a NACK reported (trimmed, refused) never reached the peer;
//   - a copy sent longer ago than the longest round trip the fabric
//     allows (Config.longestRTT) cannot be what a SACK arriving now
//     answers;
//   - the SACK's rtx flag (SETH byte 1 b0) says whether its trigger was
//     the first transmission or a retransmission.
// Without such samples a window below one packet, whose every delivery
// after a trim is a retransmission, would never grow again.

// Which earlier transmissions of a PSN may still reach the peer, in
// txPkt.marks.
const (
	echoFirst uint8 = 1 << iota // the first transmission
	echoRtx                     // a retransmission
	echoMask  = echoFirst | echoRtx
)

// mayEcho records that the transmission in flight, leaving flight without
// a NACK, may still reach the peer.
func (r *txPkt) mayEcho() {
	if r.rtx == 0 {
		r.marks |= echoFirst
	} else {
		r.marks |= echoRtx
	}
	r.echoAge = 0
}

// resent ages the record's doubtful copies as it is sent again at now.
func (r *txPkt) resent(now mtime.Time) {
	if r.marks&echoMask != 0 {
		r.echoAge = uint8(min(uint64(r.echoAge)+uint64(max(now.Sub(r.sentAt), 0)/time.Microsecond), math.MaxUint8))
	}
}

// answers reports whether a SACK arriving at now that names r's PSN as its
// trigger answers r's latest transmission: every earlier one is known
// dead, too old to be answered now, or excluded by the SACK's rtx flag.
// longest is the longest round trip the fabric allows. flagged says the
// peer sets the rtx flag (one of its SACKs has): its clear flag then names
// the first transmission, which overrules the age bound: a copy can wait
// longer than the bound assumes (strict-priority traffic ahead of it), be
// timed out and resent, and still arrive.
func (r *txPkt) answers(now mtime.Time, rtx, flagged bool, longest time.Duration) bool {
	switch {
	case r.marks&echoMask == 0:
		return true
	case flagged && !rtx && r.rtx > 0:
		return false
	case now.Sub(r.sentAt)+time.Duration(r.echoAge)*time.Microsecond > longest:
		return true
	default:
		return rtx && r.marks&echoRtx == 0
	}
}
