//go:build linux

package udpio

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/openmrc/mrc/internal/host/mmsg"
)

// sysIPV6_HDRINCL is IPV6_HDRINCL (Linux include/uapi/linux/in6.h), which
// golang.org/x/sys/unix does not name. IPPROTO_RAW implies it; setting it
// is belt and braces.
const sysIPV6_HDRINCL = 36

// nativePlane is one plane of a NativeBind: the raw socket it sends
// through and the UDP socket it receives on.
type nativePlane struct {
	raw   *os.File
	rawRC syscall.RawConn
	udp   *net.UDPConn
	udpRC syscall.RawConn
	local netip.AddrPort

	// Send scratch, guarded by NativeBind.mu.
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6
}

func (p *nativePlane) close() {
	if p.raw != nil {
		p.raw.Close()
	}
	if p.udp != nil {
		p.udp.Close()
	}
}

// errNeedRaw wraps the failure to open a raw socket.
func errNeedRaw(err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return fmt.Errorf("native framing needs CAP_NET_RAW (run as root or grant the capability) to open a raw IPv6 socket: %w", err)
	}
	return fmt.Errorf("raw IPv6 socket: %w", err)
}

// Open creates, for every plane, a raw IPv6 socket to send and a UDP
// socket bound to the plane's address and port to receive, and returns
// one ReceiveFunc per plane.
func (b *NativeBind) Open() ([]ReceiveFunc, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != 0 {
		return nil, ErrBindOpen
	}
	fail := func(err error) ([]ReceiveFunc, error) {
		b.closeLocked()
		return nil, err
	}
	var fns []ReceiveFunc
	for i, addr := range b.cfg.Planes {
		p := &nativePlane{local: netip.AddrPortFrom(addr, b.cfg.Port)}
		b.planes = append(b.planes, p)
		dev := ""
		if i < len(b.cfg.Devices) {
			dev = b.cfg.Devices[i]
		}
		if err := b.openRaw(p, dev); err != nil {
			return fail(fmt.Errorf("udpio: plane %d: %w", i, err))
		}
		if err := b.openUDP(p); err != nil {
			return fail(fmt.Errorf("udpio: plane %d: %w", i, err))
		}
		fns = append(fns, b.nativeReceiveFunc(i, p, false))
		b.polls = append(b.polls, b.nativeReceiveFunc(i, p, true))
	}
	b.state = 1
	return fns, nil
}

func (b *NativeBind) openRaw(p *nativePlane, dev string) error {
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		return errNeedRaw(err)
	}
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, sysIPV6_HDRINCL, 1)
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, b.cfg.SendBuffer) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, b.cfg.SendBuffer)
	}
	if dev != "" {
		if err := unix.SetsockoptString(fd, unix.SOL_SOCKET, unix.SO_BINDTODEVICE, dev); err != nil {
			unix.Close(fd)
			return fmt.Errorf("binding the raw socket to device %q: %w", dev, err)
		}
	}
	// Bound to the plane's address, the socket's route lookups start
	// from it: the kernel does not choose a source address for every
	// packet (the packet's own header names it anyway).
	if err := unix.Bind(fd, &unix.SockaddrInet6{Addr: p.local.Addr().As16()}); err != nil {
		unix.Close(fd)
		return fmt.Errorf("binding the raw socket to %v: %w", p.local.Addr(), err)
	}
	f := os.NewFile(uintptr(fd), "mrc-raw6")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return err
	}
	p.raw, p.rawRC = f, rc
	return nil
}

func (b *NativeBind) openUDP(p *nativePlane) error {
	conn, err := net.ListenUDP("udp6", net.UDPAddrFromAddrPort(p.local))
	if err != nil {
		return err
	}
	p.udp = conn
	rc, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	p.udpRC = rc
	var serr error
	err = rc.Control(func(fd uintptr) {
		ifd := int(fd)
		if unix.SetsockoptInt(ifd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, b.cfg.RecvBuffer) != nil {
			_ = unix.SetsockoptInt(ifd, unix.SOL_SOCKET, unix.SO_RCVBUF, b.cfg.RecvBuffer)
		}
		_ = unix.SetsockoptInt(ifd, unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 1)
		for _, opt := range []int{unix.IPV6_RECVTCLASS, sysIPV6_FLOWINFO, unix.IPV6_RECVHOPLIMIT} {
			if err := unix.SetsockoptInt(ifd, unix.IPPROTO_IPV6, opt, 1); err != nil && serr == nil {
				serr = fmt.Errorf("receive socket option %d refused: %w", opt, err)
			}
		}
	})
	if err == nil {
		err = serr
	}
	return err
}

func (b *NativeBind) nativeReceiveFunc(plane int, p *nativePlane, poll bool) ReceiveFunc {
	st := newRxScratch()
	return func(bufs [][]byte, dgs []Datagram) (int, error) {
		return b.nativeReceive(plane, p, st, bufs, dgs, poll)
	}
}

func (b *NativeBind) nativeReceive(plane int, p *nativePlane, st *rxScratch, bufs [][]byte, dgs []Datagram, poll bool) (int, error) {
	n := min(len(bufs), IdealBatchSize, len(dgs))
	if n == 0 {
		return 0, errSmallBatch
	}
	for i := range n {
		buf := bufs[i]
		if len(buf) <= nativeHeadroom {
			return 0, errSmallBatch
		}
		st.setBuf(i, buf[nativeHeadroom:])
	}
	got, err := recvmmsg(p.udpRC, st.hdrs, n, poll)
	if err != nil || got == 0 {
		return 0, err
	}
	b.stats.recvCalls.Add(1)
	for i := range got {
		h := &st.hdrs[i]
		from := decodeSockaddr(&st.names[i])
		m := parseCmsgs(st.ctrl[i*recvCtrlLen : i*recvCtrlLen+int(h.Hdr.Controllen)])
		if m.hasOverflows {
			b.stats.overflows[plane].Store(uint64(m.overflows))
		}
		tc, fl, hop := m.tclass, m.flowLabel, m.hopLimit
		pkt := bufs[i][:nativeHeadroom+int(h.Len)]
		rebuildHeaders(pkt, from, p.local, tc, fl, hop)
		dgs[i] = Datagram{Buf: pkt, Plane: plane, From: from, TClass: tc, FlowLabel: fl, HasFlowLabel: true}
	}
	b.stats.received.Add(uint64(got))
	return got, nil
}

// sendPlane sends the packets of bursts, all of plane p, one message per
// packet, with sendmmsg on the raw socket.
func (b *NativeBind) sendPlane(p *nativePlane, bursts []Burst) error {
	n := 0
	for i := range bursts {
		n += len(bursts[i].Segs)
	}
	if cap(p.hdrs) < n {
		p.hdrs = make([]unix.Mmsghdr, n)
		p.iovs = make([]unix.Iovec, n)
		p.names = make([]unix.RawSockaddrInet6, n)
	}
	hdrs := p.hdrs[:0]
	for bi := range bursts {
		bu := &bursts[bi]
		for _, seg := range bu.Segs {
			if len(seg) < 40 {
				b.stats.sendDrops.Add(1)
				continue
			}
			h := len(hdrs)
			// The kernel routes on the address given here; the packet
			// keeps its own header, so give it the packet's destination.
			sa := &p.names[h]
			*sa = unix.RawSockaddrInet6{Family: unix.AF_INET6}
			copy(sa.Addr[:], seg[24:40])
			p.iovs[h].Base = &seg[0]
			p.iovs[h].SetLen(len(seg))
			hdrs = hdrs[:h+1]
			m := &hdrs[h]
			*m = unix.Mmsghdr{}
			m.Hdr.Name = (*byte)(unsafe.Pointer(sa))
			m.Hdr.Namelen = unix.SizeofSockaddrInet6
			m.Hdr.Iov = &p.iovs[h]
			m.Hdr.SetIovlen(1)
		}
	}
	for i := 0; i < len(hdrs); {
		sent, errno, err := mmsg.Send(p.rawRC, hdrs[i:])
		if err != nil {
			return err
		}
		b.stats.sendCalls.Add(1)
		if errno == 0 {
			b.stats.sent.Add(uint64(sent))
			i += sent
			continue
		}
		// hdrs[i] was refused (no route, too long for the link): count
		// it and go on with the rest.
		b.lastErr.Store(error(errno))
		b.stats.sendDrops.Add(1)
		i++
	}
	return nil
}

// checkRaw opens and closes a raw IPv6 socket.
func checkRaw() error {
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		return errNeedRaw(err)
	}
	unix.Close(fd)
	return nil
}
