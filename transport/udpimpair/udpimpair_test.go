package udpimpair

import (
	"net"
	"testing"
	"time"
)

// TestRelay forwards both ways through the relay and loses about what it
// was told to.
func TestRelay(t *testing.T) {
	echo, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := echo.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			echo.WriteToUDPAddrPort(buf[:n], from)
		}
	}()
	r, err := New("127.0.0.1:0", echo.LocalAddr().(*net.UDPAddr).AddrPort(),
		Link{Loss: 0.2, Delay: 5 * time.Millisecond, Jitter: 2 * time.Millisecond}, Link{Loss: 0.2, Burst: 3, Delay: 5 * time.Millisecond}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 2000
	done := make(chan int)
	go func() {
		got := 0
		buf := make([]byte, 64)
		for {
			c.SetReadDeadline(time.Now().Add(time.Second))
			if _, _, err := c.ReadFromUDPAddrPort(buf); err != nil {
				done <- got
				return
			}
			got++
		}
	}()
	for i := range n {
		c.WriteToUDPAddrPort([]byte{byte(i)}, r.Addr())
		if i%20 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	got := <-done
	// 0.8 * 0.8 = 0.64 of the datagrams come back.
	if frac := float64(got) / n; frac < 0.55 || frac > 0.73 {
		t.Errorf("%.3f came back, want about 0.64 (%+v)", frac, r.Stats())
	}
	if st := r.Stats(); st.Flows != 1 {
		t.Errorf("%d flows, want 1", st.Flows)
	}
}
