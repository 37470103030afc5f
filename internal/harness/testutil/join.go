package testutil

import (
	"io"
	"net"
)

// Join copies between a and b, both ways, until both directions end. Each
// direction passes its source's end on, as a Service's NAT passes a FIN or
// a reset on: a clean end half-closes the destination, an error closes
// both. Without that a killed pod's connections stayed open at the
// server: Pulsar kept a dead ingester as a subscription's active Failover
// consumer until its keep-alive timeout (about a minute), and the
// partition marker a restarted scheduler sent meanwhile was never ingested
// (the scheduler waits for it before its first cycle).
func Join(a, b net.Conn) {
	sent := make(chan struct{})
	go func() {
		pipe(b, a)
		close(sent)
	}()
	pipe(a, b)
	<-sent
}

// pipe copies src to dst, then passes src's end on to dst.
func pipe(dst, src net.Conn) {
	if _, err := io.Copy(dst, src); err != nil {
		_ = dst.Close()
		_ = src.Close()
		return
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
		return
	}
	_ = dst.Close()
}
