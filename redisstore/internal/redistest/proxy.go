package redistest

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy forwards loopback TCP connections to a server and delays every
// byte by half the round trip each way, so that a client talking to the
// proxy sees the server RTT away, as across regions. It changes nothing
// of the host's network. The round trip can change while connections are
// open.
type Proxy struct {
	ln     net.Listener
	target string
	rtt    atomic.Int64 // time.Duration

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// StartProxy starts a proxy to target (host:port) with the round trip rtt.
// It stops, closing its connections, when the test ends.
func StartProxy(tb testing.TB, target string, rtt time.Duration) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("redistest: proxy: %v", err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.rtt.Store(int64(rtt))
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.close)
	return p
}

// Addr returns the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL returns the proxy's URL, database 0.
func (p *Proxy) URL() string { return "redis://" + p.Addr() + "/0" }

// SetRTT changes the round trip of the bytes forwarded from now on.
func (p *Proxy) SetRTT(rtt time.Duration) { p.rtt.Store(int64(rtt)) }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		var d net.Dialer
		s, err := d.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		if !p.track(c, s) {
			return
		}
		p.wg.Add(2)
		go p.pipe(s, c)
		go p.pipe(c, s)
	}
}

// track registers an open pair; false when the proxy is closing.
func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

// chunk is bytes read at a time, to be written half a round trip later.
type chunk struct {
	b  []byte
	at time.Time
}

// pipe copies from src to dst, each chunk half a round trip after it was
// read; the order is kept. When either side ends, both close.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	q := make(chan chunk, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ch := range q {
			time.Sleep(time.Until(ch.at))
			if _, err := dst.Write(ch.b); err != nil {
				break
			}
		}
		_ = dst.Close()
		_ = src.Close()
		for range q { // let the reader finish
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			q <- chunk{b: append([]byte(nil), buf[:n]...), at: time.Now().Add(time.Duration(p.rtt.Load()) / 2)}
		}
		if err != nil {
			if err != io.EOF {
				_ = dst.Close()
			}
			break
		}
	}
	close(q)
	<-done
}

func (p *Proxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}
