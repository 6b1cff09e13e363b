// Package dumbbell is a test network for the ECMP baselines (packages
// tcp and mptcp): hosts, each on its own port of one vswitch, by links of
// one rate and delay. The switch's queues are real vswitch queues, so ECN
// marking, tail drops and queue occupancy are the switch's own. Events
// run in virtual time, in order; ties break by insertion.
package dumbbell

import (
	"container/heap"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/vswitch"
)

// Host is what the network drives on a host: the host-facing method set
// the transports share. A host has one port, 0.
type Host interface {
	PollTransmit(now mtime.Time, free verbs.PortMask, buf []byte) (verbs.Transmit, bool)
	HandleDatagram(now mtime.Time, port int, pkt []byte, wireLen int)
	NextTimeout() mtime.Time
	HandleTimeout(now mtime.Time)
	PollEvent() (verbs.Event, bool)
}

// HeaderRoom is the buffer a host's PollTransmit gets: the IPv6 and TCP
// headers with the most options (the payload is phantom).
const HeaderRoom = 40 + 60

// Net is the network: hosts 0..n-1, host h on switch port h, by a link
// of Rate bits/s and Delay each way.
type Net struct {
	T     testing.TB
	Now   mtime.Time
	rate  int64
	delay time.Duration
	hosts []Host
	Sw    *vswitch.Switch
	host  []vswitch.Transmitter // host egress
	port  []vswitch.Transmitter // switch egress
	busy  []bool                // switch port serialising
	pkts  map[vswitch.Handle][]byte
	wls   map[vswitch.Handle]int
	nextH vswitch.Handle
	evs   evHeap
	seq   uint64
	timer []mtime.Time // per host: the wake-up scheduled

	// Queue statistics of switch port Watch (-1: none), integrated from
	// virtual time Warm (ns) on; QMax is the largest queue seen.
	Watch, Warm  int
	qArea        float64 // byte·ns
	qFrom, qLast mtime.Time
	QMax         int
	// Events counts the events run.
	Events int
	// OnEvent, when set, gets every event a host emits.
	OnEvent func(h int, ev verbs.Event)
	// Drop, when set, is asked about every packet reaching the switch
	// and loses those it returns true for.
	Drop    func(pkt []byte) bool
	jitter  time.Duration // see SetJitter
	rng     *rand.Rand
	arrival []mtime.Time // per host link: the last arrival at the switch
}

// SetJitter delays each packet from a host to the switch by a further
// uniform random time in [0, max), drawn from seed, keeping each link's
// order. It breaks the phase effects of a deterministic tail-drop queue
// (Floyd and Jacobson, "On traffic phase effects in packet-switched
// gateways", 1992), where one host's packets can always find the queue
// full and another's never.
func (d *Net) SetJitter(max time.Duration, seed uint64) {
	d.jitter, d.rng = max, rand.New(rand.NewPCG(seed, 0x6a09e667f3bcc909))
}

type evKind uint8

const (
	evHostTx evKind = iota // host h's port is free
	evAtSw                 // packet arrives at the switch from host h
	evPortTx               // switch port h is free
	evAtHost               // packet arrives at host h
	evTimer                // host h's timer
)

type ev struct {
	at   mtime.Time
	seq  uint64
	kind evKind
	h    int
	pkt  []byte
	wl   int
}

type evHeap []ev

func (e evHeap) Len() int { return len(e) }
func (e evHeap) Less(i, j int) bool {
	return e[i].at < e[j].at || e[i].at == e[j].at && e[i].seq < e[j].seq
}
func (e evHeap) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *evHeap) Push(x any)   { *e = append(*e, x.(ev)) }
func (e *evHeap) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

// Addr returns host h's address.
func Addr(h int) netip.Addr {
	return netip.AddrFrom16([16]byte{0xfd, 0, 14: byte(h >> 8), 15: byte(h)})
}

// New builds the network of hosts (host h at Addr(h)) and a switch whose
// every port has queue q.
func New(t testing.TB, hosts []Host, rate int64, delay time.Duration, q vswitch.QueueConfig) *Net {
	t.Helper()
	n := len(hosts)
	sw, err := vswitch.New(vswitch.Config{Ports: n, Mode: vswitch.ModeECMP, Queue: q, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	d := &Net{T: t, rate: rate, delay: delay, hosts: hosts, Sw: sw, pkts: map[vswitch.Handle][]byte{}, wls: map[vswitch.Handle]int{},
		host: make([]vswitch.Transmitter, n), port: make([]vswitch.Transmitter, n), busy: make([]bool, n),
		timer: make([]mtime.Time, n), Watch: -1, arrival: make([]mtime.Time, n)}
	for h := range n {
		a := Addr(h).As16()
		if err := sw.AddRoute(a, 128, h); err != nil {
			t.Fatal(err)
		}
		d.host[h].BitsPerSec, d.port[h].BitsPerSec = rate, rate
		d.timer[h] = mtime.Never
	}
	return d
}

func (d *Net) push(e ev) {
	d.seq++
	e.seq = d.seq
	heap.Push(&d.evs, e)
}

// Kick makes host h look for something to send now (after posting work
// outside an event).
func (d *Net) Kick(h int) { d.after(h) }

func (d *Net) ps(t mtime.Time) mtime.Picos { return t.Picos() }

// transmit sends what host h has for its free port.
func (d *Net) transmit(h int) {
	if !d.host[h].Free(d.ps(d.Now)) {
		return
	}
	buf := make([]byte, HeaderRoom)
	tx, ok := d.hosts[h].PollTransmit(d.Now, 1, buf)
	if !ok {
		return
	}
	done := ceilNanos(d.host[h].Start(d.ps(d.Now), tx.WireLen))
	d.push(ev{at: done, kind: evHostTx, h: h})
	at := done.Add(d.delay)
	if d.jitter > 0 {
		at = max(at.Add(time.Duration(d.rng.Int64N(int64(d.jitter)))), d.arrival[h])
		d.arrival[h] = at
	}
	d.push(ev{at: at, kind: evAtSw, h: h, pkt: buf[:tx.Len], wl: tx.WireLen})
}

// ceilNanos rounds p up to whole nanoseconds, so that a port is free at
// the event that says so.
func ceilNanos(p mtime.Picos) mtime.Time { return (p + mtime.PicosPerNano - 1).Nanos() }

// after hands out host h's events, sends and arms its timer.
func (d *Net) after(h int) {
	ep := d.hosts[h]
	for e, ok := ep.PollEvent(); ok; e, ok = ep.PollEvent() {
		if d.OnEvent != nil {
			d.OnEvent(h, e)
		}
	}
	d.transmit(h)
	if nt := ep.NextTimeout(); nt != mtime.Never && nt < d.timer[h] {
		d.timer[h] = nt
		d.push(ev{at: nt, kind: evTimer, h: h})
	}
}

// serve starts switch port p's next packet if it is idle.
func (d *Net) serve(p int) {
	if d.busy[p] {
		return
	}
	d.account(p)
	dq, ok := d.Sw.Dequeue(d.ps(d.Now), p)
	if !ok {
		return
	}
	d.busy[p] = true
	pkt := d.pkts[dq.Handle]
	delete(d.pkts, dq.Handle)
	done := ceilNanos(d.port[p].Start(d.ps(d.Now), dq.WireLen))
	d.push(ev{at: done, kind: evPortTx, h: p})
	d.push(ev{at: done.Add(d.delay), kind: evAtHost, h: p, pkt: pkt, wl: dq.WireLen})
}

// account integrates the watched port's queue up to now, before it
// changes.
func (d *Net) account(p int) {
	if p != d.Watch || d.Now < mtime.Time(d.Warm) {
		return
	}
	if d.qFrom == 0 {
		d.qFrom, d.qLast = d.Now, d.Now
	}
	q, _ := d.Sw.Queued(p)
	d.qArea += float64(q) * float64(d.Now-d.qLast)
	d.qLast = d.Now
	d.QMax = max(d.QMax, q)
}

// MeanQueue returns the watched port's time-averaged queue in bytes.
func (d *Net) MeanQueue() float64 {
	d.account(d.Watch)
	if d.qLast <= d.qFrom {
		return 0
	}
	return d.qArea / float64(d.qLast-d.qFrom)
}

// Step runs the next event; false when there is none.
func (d *Net) Step() bool {
	if d.evs.Len() == 0 {
		return false
	}
	e := heap.Pop(&d.evs).(ev)
	d.Now = e.at
	d.Events++
	switch e.kind {
	case evHostTx:
		d.transmit(e.h)
	case evAtSw:
		if d.Drop != nil && d.Drop(e.pkt) {
			return true
		}
		out, drop := d.Sw.Forward(e.pkt, e.h)
		if drop != vswitch.DropNone {
			return true
		}
		d.account(out)
		d.nextH++
		v := d.Sw.Enqueue(d.ps(d.Now), out, e.h, d.nextH, e.pkt, e.wl)
		if v.Drop == vswitch.DropNone {
			d.pkts[d.nextH] = e.pkt[:v.Len]
			d.serve(out)
		}
	case evPortTx:
		d.busy[e.h] = false
		d.serve(e.h)
	case evAtHost:
		d.hosts[e.h].HandleDatagram(d.Now, 0, e.pkt, e.wl)
		d.after(e.h)
	case evTimer:
		if d.timer[e.h] != e.at {
			return true
		}
		d.timer[e.h] = mtime.Never
		d.hosts[e.h].HandleTimeout(d.Now)
		d.after(e.h)
	}
	return true
}

// Run steps until virtual time limit or done, and reports whether done.
func (d *Net) Run(limit time.Duration, done func() bool) bool {
	for d.Now < mtime.Time(limit) {
		if done != nil && done() {
			return true
		}
		if !d.Step() {
			return done != nil && done()
		}
	}
	return done != nil && done()
}
