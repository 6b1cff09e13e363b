//go:build linux

package swnet

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/openmrc/mrc/internal/host/mmsg"
)

// sysPACKET_IGNORE_OUTGOING is PACKET_IGNORE_OUTGOING (Linux 4.20,
// include/uapi/linux/if_packet.h): the socket does not see the frames it
// (or anyone on the host) sends.
const sysPACKET_IGNORE_OUTGOING = 23

const ethPIPv6 = 0x86DD

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// PacketLink is a switch port on a network interface: an AF_PACKET
// datagram socket (the kernel strips and writes the Ethernet header) bound
// to the interface and to EtherType IPv6. Frames go to the neighbour's
// MAC, given or learned from the first frame received. Opening one needs
// CAP_NET_RAW.
type PacketLink struct {
	name    string
	ifindex int
	f       *os.File
	rc      syscall.RawConn

	peerMu  sync.Mutex
	peer    [6]byte
	hasPeer atomic.Bool

	// Receive scratch (one receiving goroutine).
	rhdrs  []unix.Mmsghdr
	riovs  []unix.Iovec
	rnames []unix.RawSockaddrLinklayer
	// Send scratch, guarded by smu.
	smu   sync.Mutex
	shdrs []unix.Mmsghdr
	siovs []unix.Iovec

	lastUp atomic.Bool

	// Truncated counts frames longer than the receive buffer (dropped).
	Truncated atomic.Uint64
}

var _ Link = (*PacketLink)(nil)

// OpenPacketLink opens interface name as a switch port. peer, when not
// nil, is the neighbour's MAC address.
func OpenPacketLink(name string, peer net.HardwareAddr) (*PacketLink, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return nil, fmt.Errorf("port %s: no such network interface in this namespace", name)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, int(htons(ethPIPv6)))
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return nil, fmt.Errorf("port %s: mrc switch needs CAP_NET_RAW (run as root) for an AF_PACKET socket: %w", name, err)
		}
		return nil, fmt.Errorf("port %s: AF_PACKET socket: %w", name, err)
	}
	fail := func(err error) (*PacketLink, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("port %s: %w", name, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(ethPIPv6), Ifindex: ifi.Index}); err != nil {
		return fail(err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_PACKET, sysPACKET_IGNORE_OUTGOING, 1)
	for _, o := range []struct{ force, plain, size int }{{unix.SO_RCVBUFFORCE, unix.SO_RCVBUF, 8 << 20}, {unix.SO_SNDBUFFORCE, unix.SO_SNDBUF, 4 << 20}} {
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, o.force, o.size) != nil {
			_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, o.plain, o.size)
		}
	}
	f := os.NewFile(uintptr(fd), "packet:"+name)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("port %s: %w", name, err)
	}
	l := &PacketLink{name: name, ifindex: ifi.Index, f: f, rc: rc}
	l.lastUp.Store(true)
	if len(peer) == 6 {
		copy(l.peer[:], peer)
		l.hasPeer.Store(true)
	}
	return l, nil
}

// Name returns the interface's name.
func (l *PacketLink) Name() string { return l.name }

// Peer returns the neighbour's MAC, once known.
func (l *PacketLink) Peer() (net.HardwareAddr, bool) {
	if !l.hasPeer.Load() {
		return nil, false
	}
	l.peerMu.Lock()
	defer l.peerMu.Unlock()
	return append(net.HardwareAddr(nil), l.peer[:]...), true
}

// Up reports whether the interface is up and has carrier (IFF_UP and
// IFF_LOWER_UP, from a netlink link dump: the carrier bit follows the
// link at once, where IFF_RUNNING, the operational state, can lag by a
// second). If the state cannot be read it reports what it last saw.
func (l *PacketLink) Up() bool {
	up, err := linkUp(l.ifindex)
	if err != nil {
		return l.lastUp.Load()
	}
	l.lastUp.Store(up)
	return up
}

// linkUp reads interface ifindex's flags over netlink.
func linkUp(ifindex int) (bool, error) {
	rib, err := syscall.NetlinkRIB(syscall.RTM_GETLINK, syscall.AF_UNSPEC)
	if err != nil {
		return false, err
	}
	msgs, err := syscall.ParseNetlinkMessage(rib)
	if err != nil {
		return false, err
	}
	for _, m := range msgs {
		if m.Header.Type != syscall.RTM_NEWLINK || len(m.Data) < syscall.SizeofIfInfomsg {
			continue
		}
		ifi := (*syscall.IfInfomsg)(unsafe.Pointer(&m.Data[0]))
		if int(ifi.Index) == ifindex {
			return ifi.Flags&unix.IFF_UP != 0 && ifi.Flags&unix.IFF_LOWER_UP != 0, nil
		}
	}
	return false, fmt.Errorf("interface %d not found", ifindex)
}

// Close closes the socket.
func (l *PacketLink) Close() error { return l.f.Close() }

// Receive implements Link with recvmmsg.
func (l *PacketLink) Receive(bufs [][]byte, sizes []int) (int, error) {
	n := len(bufs)
	if n == 0 {
		return 0, errors.New("swnet: empty receive batch")
	}
	if cap(l.rhdrs) < n {
		l.rhdrs = make([]unix.Mmsghdr, n)
		l.riovs = make([]unix.Iovec, n)
		l.rnames = make([]unix.RawSockaddrLinklayer, n)
	}
	hdrs := l.rhdrs[:n]
	for i := range hdrs {
		l.riovs[i].Base = &bufs[i][0]
		l.riovs[i].SetLen(len(bufs[i]))
		h := &hdrs[i]
		*h = unix.Mmsghdr{}
		h.Hdr.Name = (*byte)(unsafe.Pointer(&l.rnames[i]))
		h.Hdr.Namelen = unix.SizeofSockaddrLinklayer
		h.Hdr.Iov = &l.riovs[i]
		h.Hdr.SetIovlen(1)
	}
	got, errno, err := mmsg.Recv(l.rc, hdrs[:n], true)
	if err != nil {
		return 0, err
	}
	if errno != 0 {
		return 0, fmt.Errorf("port %s: recvmmsg: %w", l.name, errno)
	}
	k := 0
	for i := range got {
		h := &hdrs[i]
		if h.Hdr.Flags&unix.MSG_TRUNC != 0 {
			l.Truncated.Add(1)
			continue
		}
		sa := &l.rnames[i]
		if sa.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		if !l.hasPeer.Load() && sa.Halen == 6 {
			l.peerMu.Lock()
			copy(l.peer[:], sa.Addr[:6])
			l.peerMu.Unlock()
			l.hasPeer.Store(true)
		}
		if k != i {
			bufs[k], bufs[i] = bufs[i], bufs[k]
		}
		sizes[k] = int(h.Len)
		k++
	}
	return k, nil
}

// Send implements Link with sendmmsg, to the neighbour's MAC. Without a
// known neighbour nothing is sent.
func (l *PacketLink) Send(pkts [][]byte) (int, error) {
	if len(pkts) == 0 {
		return 0, nil
	}
	if !l.hasPeer.Load() {
		return 0, errNoNeighbour
	}
	l.smu.Lock()
	defer l.smu.Unlock()
	var sa unix.RawSockaddrLinklayer
	sa.Family = unix.AF_PACKET
	sa.Protocol = htons(ethPIPv6)
	sa.Ifindex = int32(l.ifindex)
	sa.Halen = 6
	l.peerMu.Lock()
	copy(sa.Addr[:], l.peer[:])
	l.peerMu.Unlock()
	if cap(l.shdrs) < len(pkts) {
		l.shdrs = make([]unix.Mmsghdr, len(pkts))
		l.siovs = make([]unix.Iovec, len(pkts))
	}
	hdrs := l.shdrs[:len(pkts)]
	for i, p := range pkts {
		l.siovs[i].Base = &p[0]
		l.siovs[i].SetLen(len(p))
		h := &hdrs[i]
		*h = unix.Mmsghdr{}
		h.Hdr.Name = (*byte)(unsafe.Pointer(&sa))
		h.Hdr.Namelen = unix.SizeofSockaddrLinklayer
		h.Hdr.Iov = &l.siovs[i]
		h.Hdr.SetIovlen(1)
	}
	sent := 0
	var lastErr error
	for i := 0; i < len(hdrs); {
		n, errno, err := mmsg.Send(l.rc, hdrs[i:])
		if err != nil {
			return sent, err
		}
		if errno != 0 {
			// hdrs[i] was refused (interface down): skip it.
			lastErr = errno
			i++
			continue
		}
		sent += n
		i += n
	}
	if sent < len(pkts) && lastErr != nil {
		return sent, &SendError{Err: lastErr}
	}
	return sent, nil
}

func peerOf(l *PacketLink) (string, bool) {
	mac, ok := l.Peer()
	if !ok {
		return "", false
	}
	return mac.String(), true
}
