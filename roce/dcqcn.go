package roce

import (
	"math"
	"time"

	"github.com/openmrc/mrc/mtime"
)

// DCQCN is the reaction point of DCQCN (Zhu et al., SIGCOMM 2015, §3.1):
// the rate controller of one QP. A CNP cuts the current rate RC by alpha/2
// after remembering it as the target rate RT; alpha, the congestion
// estimate, moves towards 1 on each CNP and decays towards 0 every K
// without one. After a cut, a timer (every T) and a byte counter (every B
// bytes sent) each drive increase events: the first F of each kind are
// fast recovery (RC = (RT+RC)/2), then additive increase (RT += R_AI
// first), and hyper increase (RT += R_HAI first) once both counters are
// past F. The rate never leaves [MinRate, line rate].
//
// The timers are evaluated lazily: every method that takes now first
// applies the alpha decays and timer increases due by then, in order, so
// a DCQCN needs no wake-ups of its own and costs nothing while its QP is
// idle. NextIncrease tells a pacer when the rate will next rise.
//
// A DCQCN is pure: it reads no clock. It is not safe for concurrent use.
type DCQCN struct {
	cfg  DCQCNConfig
	line float64

	rc, rt    float64 // current and target rate, b/s
	alpha     float64
	alphaAt   mtime.Time // alpha is current as of this instant
	incAt     mtime.Time // the last timer increase, or the last cut
	lastCut   mtime.Time
	bytes     int64 // bytes sent since the last byte-counter increase
	timeStage int   // timer increases since the last cut
	byteStage int   // byte-counter increases since the last cut
	notified  bool  // a CNP has arrived: alpha is live
	recover   bool  // below line rate: timer and byte counter run

	cuts uint64
}

// NewDCQCN returns a reaction point sending at line rate at now. cfg
// should come from DCQCNConfig.WithDefaults.
func NewDCQCN(cfg DCQCNConfig, lineBitsPerSec int64, now mtime.Time) *DCQCN {
	d := new(DCQCN)
	d.init(cfg, lineBitsPerSec, now)
	return d
}

func (d *DCQCN) init(cfg DCQCNConfig, line int64, now mtime.Time) {
	*d = DCQCN{cfg: cfg, line: float64(line), rc: float64(line), rt: float64(line),
		alpha: cfg.InitialAlpha, alphaAt: now, incAt: now}
}

// advance applies every alpha decay and timer increase due at now.
func (d *DCQCN) advance(now mtime.Time) {
	if d.notified {
		if k := d.cfg.AlphaPeriod; now.Sub(d.alphaAt) >= k {
			n := int64(now.Sub(d.alphaAt) / k)
			d.alpha *= math.Pow(1-d.cfg.G, float64(n))
			d.alphaAt = d.alphaAt.Add(time.Duration(n) * k)
		}
	}
	for d.recover && now.Sub(d.incAt) >= d.cfg.RateTimer {
		d.incAt = d.incAt.Add(d.cfg.RateTimer)
		d.timeStage++
		d.increase()
	}
}

// increase runs one increase event (paper §3.1, eqs. 3–4; QCN's stages).
func (d *DCQCN) increase() {
	f := d.cfg.Threshold
	switch {
	case d.timeStage > f && d.byteStage > f:
		d.rt += float64(d.cfg.HAIRate) // hyper increase
	case d.timeStage > f || d.byteStage > f:
		d.rt += float64(d.cfg.AIRate) // additive increase
	}
	d.rt = min(d.rt, d.line)
	d.rc = (d.rt + d.rc) / 2
	if d.rt == d.line && d.line-d.rc <= d.line*1e-6 {
		d.rc = d.line // recovered: the timer and byte counter stop
		d.recover = false
	}
}

// OnCNP reacts to a congestion notification at now and reports whether
// it cut the rate (a CNP within CutHoldoff of the last cut only updates
// alpha). The cut uses alpha as it was before this CNP (paper eq. 1).
func (d *DCQCN) OnCNP(now mtime.Time) (cut bool) {
	d.advance(now)
	if d.cuts == 0 || now.Sub(d.lastCut) >= d.cfg.CutHoldoff {
		d.rt = d.rc
		d.rc = max(d.rc*(1-d.alpha/2), float64(d.cfg.MinRate))
		d.incAt, d.lastCut = now, now
		d.bytes, d.timeStage, d.byteStage = 0, 0, 0
		d.recover = true
		d.cuts++
		cut = true
	}
	d.alpha = (1-d.cfg.G)*d.alpha + d.cfg.G
	d.alphaAt = now
	d.notified = true
	return cut
}

// OnSent counts bytes sent at now towards the byte counter.
func (d *DCQCN) OnSent(now mtime.Time, bytes int) {
	d.advance(now)
	if !d.recover {
		return
	}
	d.bytes += int64(bytes)
	for d.recover && d.bytes >= d.cfg.ByteCounter {
		d.bytes -= d.cfg.ByteCounter
		d.byteStage++
		d.increase()
	}
	if !d.recover {
		d.bytes = 0
	}
}

// Rate returns the current rate RC at now in bits per second.
func (d *DCQCN) Rate(now mtime.Time) int64 {
	d.advance(now)
	return int64(d.rc)
}

// Target returns the target rate RT at now in bits per second.
func (d *DCQCN) Target(now mtime.Time) int64 {
	d.advance(now)
	return int64(d.rt)
}

// Alpha returns alpha at now.
func (d *DCQCN) Alpha(now mtime.Time) float64 {
	d.advance(now)
	return d.alpha
}

// Stages returns the timer and byte-counter increase events since the
// last cut.
func (d *DCQCN) Stages() (timer, bytes int) { return d.timeStage, d.byteStage }

// Cuts returns the number of rate cuts so far.
func (d *DCQCN) Cuts() uint64 { return d.cuts }

// NextIncrease returns when the timer next raises the rate, or
// mtime.Never when the rate is at line rate.
func (d *DCQCN) NextIncrease() mtime.Time {
	if !d.recover {
		return mtime.Never
	}
	return d.incAt.Add(d.cfg.RateTimer)
}

// pacer spaces a QP's data packets at its DCQCN rate: after a packet of
// b bits sent at s, the next may go at s + b/rate, with rate the QP's
// current rate, so a cut or an increase during the gap takes effect at
// once. Gaps are kept to the picosecond so that pacing does not drift.
// Below line rate only; at line rate the port paces.
type pacer struct {
	base mtime.Time // start of the current gap, ns
	frac int64      // and its picoseconds beyond base
	bits int64      // size of the packet that opened the gap
}

// gap returns the end of the current gap at rate as whole nanoseconds
// after base and the picosecond remainder.
func (p *pacer) gap(rate int64) (ns int64, ps int64) {
	t := p.frac + p.bits*1e12/rate
	return t / 1000, t % 1000
}

// next returns the earliest time the next packet may go at rate.
func (p *pacer) next(rate int64) mtime.Time {
	if p.bits == 0 {
		return 0
	}
	ns, ps := p.gap(rate)
	t := p.base + mtime.Time(ns)
	if ps > 0 {
		t++
	}
	return t
}

// sent opens a gap for a packet of bits sent at now at rate. A packet
// sent as soon as the previous gap allowed continues its exact end, so
// that a paced stream keeps the rate to the picosecond.
func (p *pacer) sent(now mtime.Time, bits int64, rate int64) {
	if p.bits > 0 && now == p.next(rate) {
		ns, ps := p.gap(rate)
		p.base, p.frac = p.base+mtime.Time(ns), ps
	} else {
		p.base, p.frac = now, 0
	}
	p.bits = bits
}
