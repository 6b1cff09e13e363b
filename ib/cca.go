package ib

import (
	"time"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/roce"
)

// CCA is the reaction point of IB's congestion control annex for one QP
// (IBTA Vol. 1 Annex A10, QP-based): a BECN raises the QP's CCT index by
// CCTIIncrease, up to the table's last index; while the index is above
// CCTIMin, a timer lowers it by one every CCTITimer, started by the first
// BECN and kept running until the index is back at the floor (as the
// Linux hfi1 driver runs it). After each data packet the QP waits the
// table's inter-packet delay at the current index beyond the packet's
// own serialisation. The timer is evaluated lazily, so an idle QP costs
// nothing. A CCA is pure and not safe for concurrent use.
type CCA struct {
	cfg     CCAConfig
	pktTime time.Duration // an MTU-sized packet's serialisation at line rate
	line    int64

	ccti    int
	tickAt  mtime.Time // the next decrement, while ccti > CCTIMin
	lastAt  mtime.Time // the last data packet's start
	lastSer time.Duration
	sent    bool
	becns   uint64
}

var _ roce.Reaction = (*CCA)(nil)

// NewCCA returns a reaction point at index CCTIMin (line rate, unless the
// table says otherwise) for a port of lineBitsPerSec whose largest packet
// is maxPacket bytes on the wire. cfg should come from
// CCAConfig.WithDefaults.
func NewCCA(cfg CCAConfig, lineBitsPerSec int64, maxPacket int) *CCA {
	return &CCA{cfg: cfg, line: lineBitsPerSec, pktTime: ser(maxPacket, lineBitsPerSec), ccti: cfg.CCTIMin}
}

// ser returns how long n bytes take at bitsPerSec.
func ser(n int, bitsPerSec int64) time.Duration {
	return time.Duration((int64(n)*8*int64(time.Second) + bitsPerSec - 1) / bitsPerSec)
}

// advance applies the timer's decrements due by now.
func (c *CCA) advance(now mtime.Time) {
	for c.ccti > c.cfg.CCTIMin && now >= c.tickAt {
		c.ccti--
		c.tickAt = c.tickAt.Add(c.cfg.CCTITimer)
	}
}

// Index returns the CCT index at now.
func (c *CCA) Index(now mtime.Time) int {
	c.advance(now)
	return c.ccti
}

// IPD returns the inter-packet delay at now: the CCT entry at the
// current index, multiplier × packet time / 2^shift.
func (c *CCA) IPD(now mtime.Time) time.Duration {
	c.advance(now)
	e := c.cfg.CCT[c.ccti]
	return c.pktTime >> (e >> 14) * time.Duration(e&0x3FFF)
}

// SendAt returns when the QP's next data packet may go: the end of the
// last one plus the inter-packet delay.
func (c *CCA) SendAt(now mtime.Time) mtime.Time {
	if !c.sent {
		return 0
	}
	ipd := c.IPD(now)
	if ipd == 0 {
		return 0 // line rate: the port paces
	}
	return c.lastAt.Add(c.lastSer + ipd)
}

// OnSent records a data packet of wireLen bytes sent at now.
func (c *CCA) OnSent(now mtime.Time, wireLen int) {
	c.lastAt, c.lastSer, c.sent = now, ser(wireLen, c.line), true
}

// OnBECN raises the index by CCTIIncrease, up to the table's end, and
// starts the timer if it is not running. It reports whether the index
// rose.
func (c *CCA) OnBECN(now mtime.Time) bool {
	c.advance(now)
	c.becns++
	if c.ccti <= c.cfg.CCTIMin {
		c.tickAt = now.Add(c.cfg.CCTITimer)
	}
	limit := len(c.cfg.CCT) - 1
	if c.ccti >= limit {
		return false
	}
	c.ccti = min(c.ccti+c.cfg.CCTIIncrease, limit)
	return true
}

// NextChange returns the timer's next decrement, or mtime.Never at the
// floor.
func (c *CCA) NextChange(now mtime.Time) mtime.Time {
	c.advance(now)
	if c.ccti <= c.cfg.CCTIMin {
		return mtime.Never
	}
	return c.tickAt
}

// BECNs returns the BECNs received so far.
func (c *CCA) BECNs() uint64 { return c.becns }
