//go:build !linux

package udpio

import (
	"net"
	"net/netip"
)

// The portable StdBind: one plain datagram per call, no traffic class,
// flow label, GSO or GRO.

type stdSockSys struct{}

func (b *StdBind) openSocket(plane int, a netip.AddrPort, primary bool) (*stdSocket, error) {
	s, err := listenStd(plane, a)
	if err != nil {
		return nil, err
	}
	_ = s.conn.SetReadBuffer(b.cfg.RecvBuffer)
	_ = s.conn.SetWriteBuffer(b.cfg.SendBuffer)
	b.gso.Store(false)
	b.gro = false
	return s, nil
}

func (b *StdBind) receiveFunc(plane int, s *stdSocket) ReceiveFunc {
	return func(bufs [][]byte, dgs []Datagram) (int, error) {
		if len(bufs) == 0 || len(dgs) == 0 {
			return 0, net.ErrClosed
		}
		n, from, err := s.conn.ReadFromUDPAddrPort(bufs[0])
		if err != nil {
			return 0, err
		}
		b.stats.recvCalls.Add(1)
		b.stats.received.Add(1)
		dgs[0] = Datagram{Buf: bufs[0][:n], Plane: plane, From: netip.AddrPortFrom(from.Addr().Unmap(), from.Port())}
		return 1, nil
	}
}

// pollFunc: no non-blocking receive here.
func (b *StdBind) pollFunc(int, *stdSocket) ReceiveFunc { return nil }

func (b *StdBind) sendSocket(s *stdSocket, bursts []Burst) error {
	for i := range bursts {
		for _, seg := range bursts[i].Segs {
			b.stats.sendCalls.Add(1)
			if _, err := s.conn.WriteToUDPAddrPort(seg, bursts[i].To); err != nil {
				b.stats.sendDrops.Add(1)
				continue
			}
			b.stats.sent.Add(1)
		}
	}
	return nil
}
