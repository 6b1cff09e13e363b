//go:build linux

package udpio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/openmrc/mrc/internal/host/mmsg"
)

// IPv6 socket options golang.org/x/sys/unix does not name, from the spec
// (Linux include/uapi/linux/in6.h).
const (
	sysIPV6_FLOWINFO      = 11 // receive the flow information (IPV6_FLOWINFO cmsg)
	sysIPV6_FLOWINFO_SEND = 33 // take the flow label from sin6_flowinfo on send
)

// Control-message space: on send a traffic class (int) and a GSO segment
// size (u16); on receive a traffic class or TOS, the flow information, the
// GRO segment size and the socket's overflow count.
var (
	sendCtrlLen = unix.CmsgSpace(4) + unix.CmsgSpace(2)
	recvCtrlLen = 4 * unix.CmsgSpace(4)
)

// stdSockSys is the Linux part of a socket: its raw descriptor access and
// the send scratch, which StdBind.mu guards.
type stdSockSys struct {
	rc    syscall.RawConn
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6
	ctrl  []byte
	owner []int // hdrs[i] sends bursts[owner[i]]
	segs  []int // datagrams in hdrs[i]
}

func (b *StdBind) openSocket(plane int, a netip.AddrPort, primary bool) (*stdSocket, error) {
	s, err := listenStd(plane, a)
	if err != nil {
		return nil, err
	}
	conn, v4 := s.conn, s.v4
	rc, err := conn.SyscallConn()
	if err != nil {
		conn.Close()
		return nil, err
	}
	s.sys.rc = rc
	var serr error
	err = rc.Control(func(fd uintptr) {
		ifd := int(fd)
		// Buffers: try to exceed the sysctl caps (needs CAP_NET_ADMIN),
		// else take what the kernel gives.
		if unix.SetsockoptInt(ifd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, b.cfg.RecvBuffer) != nil {
			_ = unix.SetsockoptInt(ifd, unix.SOL_SOCKET, unix.SO_RCVBUF, b.cfg.RecvBuffer)
		}
		if unix.SetsockoptInt(ifd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, b.cfg.SendBuffer) != nil {
			_ = unix.SetsockoptInt(ifd, unix.SOL_SOCKET, unix.SO_SNDBUF, b.cfg.SendBuffer)
		}
		_ = unix.SetsockoptInt(ifd, unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 1)
		if v4 {
			_ = unix.SetsockoptInt(ifd, unix.IPPROTO_IP, unix.IP_RECVTOS, 1)
		} else {
			_ = unix.SetsockoptInt(ifd, unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS, 1)
			_ = unix.SetsockoptInt(ifd, unix.IPPROTO_IPV6, sysIPV6_FLOWINFO, 1)
			if b.cfg.FlowLabels {
				if err := unix.SetsockoptInt(ifd, unix.IPPROTO_IPV6, sysIPV6_FLOWINFO_SEND, 1); err != nil {
					serr = fmt.Errorf("per-packet flow labels (IPV6_FLOWINFO_SEND) refused by the kernel: %w", err)
				}
			}
		}
		if primary && b.gro {
			if unix.SetsockoptInt(ifd, unix.IPPROTO_UDP, unix.UDP_GRO, 1) != nil {
				b.gro = false
			}
		}
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	return s, nil
}

// rxScratch is the state of one ReceiveFunc.
type rxScratch struct {
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6
	ctrl  []byte
}

func newRxScratch() *rxScratch {
	return &rxScratch{
		hdrs:  make([]unix.Mmsghdr, IdealBatchSize),
		iovs:  make([]unix.Iovec, IdealBatchSize),
		names: make([]unix.RawSockaddrInet6, IdealBatchSize),
		ctrl:  make([]byte, IdealBatchSize*recvCtrlLen),
	}
}

// setBuf points message i at buf and resets its name and control space
// for the next recvmmsg. buf must not be empty.
func (st *rxScratch) setBuf(i int, buf []byte) {
	st.iovs[i].Base = &buf[0]
	st.iovs[i].SetLen(len(buf))
	h := &st.hdrs[i]
	h.Hdr.Name = (*byte)(unsafe.Pointer(&st.names[i]))
	h.Hdr.Namelen = unix.SizeofSockaddrInet6
	h.Hdr.Iov = &st.iovs[i]
	h.Hdr.SetIovlen(1)
	h.Hdr.Control = &st.ctrl[i*recvCtrlLen]
	h.Hdr.SetControllen(recvCtrlLen)
	h.Hdr.Flags = 0
	h.Len = 0
}

func (b *StdBind) receiveFunc(plane int, s *stdSocket) ReceiveFunc {
	st := newRxScratch()
	return func(bufs [][]byte, dgs []Datagram) (int, error) {
		return b.receive(plane, s, st, bufs, dgs, false)
	}
}

// pollFunc is receiveFunc's non-blocking twin, with its own scratch.
func (b *StdBind) pollFunc(plane int, s *stdSocket) ReceiveFunc {
	st := newRxScratch()
	return func(bufs [][]byte, dgs []Datagram) (int, error) {
		return b.receive(plane, s, st, bufs, dgs, true)
	}
}

// recvmmsg reads up to n messages into hdrs: blocking in the runtime's
// poller, or (poll) at once, returning 0 when nothing waits.
func recvmmsg(rc syscall.RawConn, hdrs []unix.Mmsghdr, n int, poll bool) (int, error) {
	got, errno, err := mmsg.Recv(rc, hdrs[:n], !poll)
	if err != nil {
		return 0, err
	}
	if errno != 0 {
		return 0, fmt.Errorf("udpio: recvmmsg: %w", errno)
	}
	return got, nil
}

var errSmallBatch = errors.New("udpio: receive batch too small: need a buffer and MaxSegments datagrams")

func (b *StdBind) receive(plane int, s *stdSocket, st *rxScratch, bufs [][]byte, dgs []Datagram, poll bool) (int, error) {
	n := min(len(bufs), IdealBatchSize, len(dgs)/MaxSegments)
	if n == 0 {
		return 0, errSmallBatch
	}
	for i := range n {
		buf := bufs[i]
		if len(buf) == 0 {
			return 0, errSmallBatch
		}
		st.setBuf(i, buf)
	}
	got, err := recvmmsg(s.sys.rc, st.hdrs, n, poll)
	if err != nil || got == 0 {
		return 0, err
	}
	b.stats.recvCalls.Add(1)
	k := 0
	for i := range got {
		h := &st.hdrs[i]
		size := int(h.Len)
		from := decodeSockaddr(&st.names[i])
		m := parseCmsgs(st.ctrl[i*recvCtrlLen : i*recvCtrlLen+int(h.Hdr.Controllen)])
		if m.hasOverflows {
			b.stats.overflows[plane].Store(uint64(m.overflows))
		}
		tc, fl, hasFl, seg := m.tclass, m.flowLabel, m.hasFlowLabel, m.gro
		buf := bufs[i][:size]
		if seg <= 0 || seg >= size {
			dgs[k] = Datagram{Buf: buf, Plane: plane, From: from, TClass: tc, FlowLabel: fl, HasFlowLabel: hasFl}
			k++
			continue
		}
		b.stats.coalesced.Add(1)
		for off := 0; off < size && k < len(dgs); off += seg {
			end := min(off+seg, size)
			dgs[k] = Datagram{Buf: buf[off:end:end], Plane: plane, From: from, TClass: tc, FlowLabel: fl, HasFlowLabel: hasFl}
			k++
		}
	}
	b.stats.received.Add(uint64(k))
	return k, nil
}

// recvMeta is what the control messages of one received datagram say.
type recvMeta struct {
	tclass       uint8
	flowLabel    uint32
	hasFlowLabel bool
	hopLimit     uint8 // 64 when not reported
	gro          int   // UDP_GRO segment size, 0 when not coalesced
	overflows    uint32
	hasOverflows bool
}

// parseCmsgs reads the control messages the sockets ask for: traffic
// class (IPv6 or IPv4), flow label, hop limit, GRO segment size and the
// receive-queue overflow count.
func parseCmsgs(ctrl []byte) recvMeta {
	m := recvMeta{hopLimit: 64}
	for len(ctrl) >= unix.SizeofCmsghdr {
		c := (*unix.Cmsghdr)(unsafe.Pointer(&ctrl[0]))
		clen := int(c.Len)
		if clen < unix.SizeofCmsghdr || clen > len(ctrl) {
			break
		}
		data := ctrl[unix.CmsgLen(0):clen]
		switch {
		case c.Level == unix.IPPROTO_IPV6 && c.Type == unix.IPV6_TCLASS && len(data) >= 4:
			m.tclass = uint8(*(*int32)(unsafe.Pointer(&data[0])))
		case c.Level == unix.IPPROTO_IP && c.Type == unix.IP_TOS && len(data) >= 1:
			m.tclass = data[0]
		case c.Level == unix.IPPROTO_IPV6 && c.Type == sysIPV6_FLOWINFO && len(data) >= 4:
			m.flowLabel, m.hasFlowLabel = binary.BigEndian.Uint32(data)&0xFFFFF, true
		case c.Level == unix.IPPROTO_IPV6 && c.Type == unix.IPV6_HOPLIMIT && len(data) >= 4:
			m.hopLimit = uint8(*(*int32)(unsafe.Pointer(&data[0])))
		case c.Level == unix.IPPROTO_UDP && c.Type == unix.UDP_GRO && len(data) >= 4:
			m.gro = int(*(*int32)(unsafe.Pointer(&data[0])))
		case c.Level == unix.SOL_SOCKET && c.Type == unix.SO_RXQ_OVFL && len(data) >= 4:
			m.overflows, m.hasOverflows = *(*uint32)(unsafe.Pointer(&data[0])), true
		}
		sp := unix.CmsgSpace(clen - unix.CmsgLen(0))
		if sp > len(ctrl) {
			break
		}
		ctrl = ctrl[sp:]
	}
	return m
}

func decodeSockaddr(sa *unix.RawSockaddrInet6) netip.AddrPort {
	port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:])
	switch sa.Family {
	case unix.AF_INET6:
		a := netip.AddrFrom16(sa.Addr)
		return netip.AddrPortFrom(a.Unmap(), port)
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), port)
	}
	return netip.AddrPort{}
}

// encodeSockaddr writes to into sa for a socket of the given family and
// reports whether it can be sent there.
func encodeSockaddr(sa *unix.RawSockaddrInet6, to netip.AddrPort, flow uint32, v4 bool) bool {
	*sa = unix.RawSockaddrInet6{}
	a := to.Addr()
	if v4 {
		if !a.Is4() && !a.Is4In6() {
			return false
		}
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		sa4.Family = unix.AF_INET
		binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa4.Port))[:], to.Port())
		sa4.Addr = a.Unmap().As4()
		return true
	}
	if a.Is4() {
		return false
	}
	sa.Family = unix.AF_INET6
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], to.Port())
	binary.BigEndian.PutUint32((*[4]byte)(unsafe.Pointer(&sa.Flowinfo))[:], flow&0xFFFFF)
	sa.Addr = a.As16()
	if z := a.Zone(); z != "" {
		if ifi, err := net.InterfaceByName(z); err == nil {
			sa.Scope_id = uint32(ifi.Index)
		}
	}
	return true
}

// putCmsg writes one control message at the start of b and returns the
// space it takes.
func putCmsg(b []byte, level, typ int32, data []byte) int {
	c := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	c.Level, c.Type = level, typ
	c.SetLen(unix.CmsgLen(len(data)))
	copy(b[unix.CmsgLen(0):], data)
	return unix.CmsgSpace(len(data))
}

// sendSocket sends bursts, all of socket s: one message per burst with
// UDP GSO, else one per datagram.
func (b *StdBind) sendSocket(s *stdSocket, bursts []Burst) error {
	gso := b.gso.Load()
	x := &s.sys
	nh, ni := 0, 0
	for i := range bursts {
		n := len(bursts[i].Segs)
		ni += n
		if gso {
			nh++
		} else {
			nh += n
		}
	}
	if cap(x.hdrs) < nh {
		x.hdrs = make([]unix.Mmsghdr, nh)
		x.names = make([]unix.RawSockaddrInet6, nh)
		x.ctrl = make([]byte, nh*sendCtrlLen)
		x.owner = make([]int, nh)
		x.segs = make([]int, nh)
	}
	if cap(x.iovs) < ni {
		x.iovs = make([]unix.Iovec, ni)
	}
	hdrs := x.hdrs[:0]
	iov := 0
	var tcb [4]byte
	var segb [2]byte
	for bi := range bursts {
		bu := &bursts[bi]
		if len(bu.Segs) == 0 {
			continue
		}
		per := len(bu.Segs) // datagrams per message
		if !gso {
			per = 1
		}
		for first := 0; first < len(bu.Segs); first += per {
			segs := bu.Segs[first:min(first+per, len(bu.Segs))]
			h := len(hdrs)
			if !encodeSockaddr(&x.names[h], bu.To, bu.FlowLabel, s.v4) {
				b.stats.sendDrops.Add(uint64(len(segs)))
				continue
			}
			hdrs = hdrs[:h+1]
			m := &hdrs[h]
			*m = unix.Mmsghdr{}
			m.Hdr.Name = (*byte)(unsafe.Pointer(&x.names[h]))
			if s.v4 {
				m.Hdr.Namelen = unix.SizeofSockaddrInet4
			} else {
				m.Hdr.Namelen = unix.SizeofSockaddrInet6
			}
			start := iov
			for _, sg := range segs {
				if len(sg) == 0 {
					x.iovs[iov] = unix.Iovec{}
				} else {
					x.iovs[iov].Base = &sg[0]
					x.iovs[iov].SetLen(len(sg))
				}
				iov++
			}
			m.Hdr.Iov = &x.iovs[start]
			m.Hdr.SetIovlen(len(segs))
			ctrl := x.ctrl[h*sendCtrlLen : (h+1)*sendCtrlLen]
			binary.NativeEndian.PutUint32(tcb[:], uint32(bu.TClass))
			cl := 0
			if s.v4 {
				cl += putCmsg(ctrl[cl:], unix.IPPROTO_IP, unix.IP_TOS, tcb[:])
			} else {
				cl += putCmsg(ctrl[cl:], unix.IPPROTO_IPV6, unix.IPV6_TCLASS, tcb[:])
			}
			if len(segs) > 1 {
				binary.NativeEndian.PutUint16(segb[:], uint16(len(segs[0])))
				cl += putCmsg(ctrl[cl:], unix.IPPROTO_UDP, unix.UDP_SEGMENT, segb[:])
			}
			m.Hdr.Control = &ctrl[0]
			m.Hdr.SetControllen(cl)
			x.owner[h] = bi
			x.segs[h] = len(segs)
		}
	}
	for i := 0; i < len(hdrs); {
		sent, errno, err := mmsg.Send(x.rc, hdrs[i:])
		if err != nil {
			return err
		}
		b.stats.sendCalls.Add(1)
		if errno == 0 {
			for _, n := range x.segs[i : i+sent] {
				b.stats.sent.Add(uint64(n))
			}
			i += sent
			continue
		}
		// hdrs[i] failed. A GSO message the kernel cannot segment (no
		// checksum offload on the device, a segment over the path MTU)
		// turns GSO off for good and is sent again datagram by datagram.
		if x.segs[i] > 1 && (errno == unix.EIO || errno == unix.EINVAL || errno == unix.ENOPROTOOPT || errno == unix.EOPNOTSUPP) {
			b.gso.Store(false)
			return b.sendSocket(s, bursts[x.owner[i]:])
		}
		b.stats.sendDrops.Add(uint64(x.segs[i]))
		i++
	}
	return nil
}
