package mmsg

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSendRecvLoopback sends three datagrams in one Send over loopback
// and reads them back with Recv, without and then with waiting.
func TestSendRecvLoopback(t *testing.T) {
	rx, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	defer rx.Close()
	tx, err := net.DialUDP("udp6", nil, rx.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	rrc, _ := rx.SyscallConn()
	trc, _ := tx.SyscallConn()

	hdrs := make([]unix.Mmsghdr, 4)
	if got, _, err := Recv(rrc, hdrs[:1], false); err != nil || got != 0 {
		t.Fatalf("Recv without waiting on an empty socket: %d, %v", got, err)
	}
	msgs := [][]byte{[]byte("one"), []byte("two!"), []byte("three")}
	iovs := make([]unix.Iovec, len(msgs))
	for i, m := range msgs {
		iovs[i].Base = &m[0]
		iovs[i].SetLen(len(m))
		hdrs[i].Hdr.Iov = &iovs[i]
		hdrs[i].Hdr.SetIovlen(1)
	}
	if sent, errno, err := Send(trc, hdrs[:3]); err != nil || errno != 0 || sent != 3 {
		t.Fatalf("Send: %d, %v, %v", sent, errno, err)
	}
	bufs := make([][64]byte, 4)
	riovs := make([]unix.Iovec, 4)
	for i := range hdrs {
		hdrs[i] = unix.Mmsghdr{}
		riovs[i].Base = &bufs[i][0]
		riovs[i].SetLen(len(bufs[i]))
		hdrs[i].Hdr.Iov = &riovs[i]
		hdrs[i].Hdr.SetIovlen(1)
	}
	total := 0
	for total < 3 {
		got, errno, err := Recv(rrc, hdrs[total:], true)
		if err != nil || errno != 0 {
			t.Fatalf("Recv: %v %v", errno, err)
		}
		for i := total; i < total+got; i++ {
			if s := string(bufs[i][:hdrs[i].Len]); s != string(msgs[i]) {
				t.Fatalf("message %d = %q, want %q", i, s, msgs[i])
			}
		}
		total += got
	}
}
