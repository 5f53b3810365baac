// Package redistest finds or starts the redis-server processes that the
// tests of redisstore run against, on loopback only.
//
// Tests use the server named by TOOLGUARD_REDIS_URL when it is set;
// otherwise they start their own redis-server (found on PATH) on a free
// loopback port. When neither works they are skipped, except under
// CI=true, where they fail.
package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// EnvURL names the environment variable holding the URL of a running
// server for the tests, such as redis://127.0.0.1:6390/0.
const EnvURL = "TOOLGUARD_REDIS_URL"

// unavailable skips the test, or fails it under CI=true.
func unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		tb.Fatalf("redis is required under CI=true: %s", msg)
	}
	tb.Skipf("skipping: %s (install redis-server or set %s)", msg, EnvURL)
}

// Shared is the server that the tests of one package share.
type Shared struct {
	url string
	srv *Server
	err error
}

// StartShared returns the server named by TOOLGUARD_REDIS_URL, or starts
// one. Call it from TestMain and Close it after m.Run; an error is kept
// and reported by URL.
func StartShared() *Shared {
	if u := os.Getenv(EnvURL); u != "" {
		return &Shared{url: u}
	}
	srv, err := start(nil)
	if err != nil {
		return &Shared{err: err}
	}
	return &Shared{url: srv.URL(), srv: srv}
}

// URL returns the shared server's URL, or skips (fails under CI=true) the
// test when there is none.
func (s *Shared) URL(tb testing.TB) string {
	tb.Helper()
	if s.url == "" {
		unavailable(tb, "no redis server: %v", s.err)
	}
	return s.url
}

// Close stops the server if StartShared started it.
func (s *Shared) Close() {
	if s.srv != nil {
		s.srv.stop()
	}
}

// URL returns TOOLGUARD_REDIS_URL when it is set, or else the URL of a
// private server started for the test (see Start).
func URL(tb testing.TB) string {
	tb.Helper()
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	return Start(tb).URL()
}

// Server is a redis-server process private to a test, so that the test
// may kill, pause and restart it.
type Server struct {
	path string
	port int
	dir  string
	args []string
	conf string // a configuration file, the first argument (a Sentinel's)
	own  bool   // dir was made by start

	mu   sync.Mutex
	proc *process // nil while killed
}

// process is a running redis-server; exited yields its Wait result.
type process struct {
	cmd    *exec.Cmd
	exited chan error
}

func (p *process) kill() {
	if sigCont != nil {
		_ = p.cmd.Process.Signal(sigCont) // a paused process dies too
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// Start starts a private redis-server on a free loopback port, without
// persistence unless args ask for it (args are passed as they are, after
// the defaults). It is killed when the test ends.
func Start(tb testing.TB, args ...string) *Server {
	tb.Helper()
	s, err := start(args)
	if err != nil {
		unavailable(tb, "cannot start redis-server: %v", err)
	}
	tb.Cleanup(s.stop)
	return s
}

func start(args []string) (*Server, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, err
	}
	s := &Server{path: path, dir: dir, args: args, own: true}
	for try := 0; try < 3; try++ {
		if s.port, err = freePort(); err != nil {
			break
		}
		if err = s.launch(); err == nil {
			return s, nil
		}
	}
	_ = os.RemoveAll(dir)
	return nil, err
}

// URL returns the server's URL, database 0.
func (s *Server) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", s.port) }

// Addr returns the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Kill ends the server at once (SIGKILL), as a crash would.
func (s *Server) Kill(tb testing.TB) {
	tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		s.proc.kill()
		s.proc = nil
	}
}

// Restart starts the killed server again on the same port, with the same
// arguments and directory (so an append-only file is read back).
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		tb.Fatal("redistest: Restart of a running server")
	}
	var err error
	for try := 0; try < 20; try++ { // the port may linger for a moment
		if err = s.launchLocked(); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	tb.Fatalf("redistest: restart: %v", err)
}

// Pause stops the process (SIGSTOP): it keeps its connections and
// answers nothing, as a hung server would. Resume continues it.
func (s *Server) Pause(tb testing.TB) { s.signal(tb, sigStop) }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume(tb testing.TB) { s.signal(tb, sigCont) }

func (s *Server) signal(tb testing.TB, sig os.Signal) {
	tb.Helper()
	if sig == nil {
		tb.Skip("skipping: this system cannot pause a process")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		tb.Fatal("redistest: the server is not running")
	}
	if err := s.proc.cmd.Process.Signal(sig); err != nil {
		tb.Fatalf("redistest: %v", err)
	}
}

func (s *Server) stop() {
	s.mu.Lock()
	if s.proc != nil {
		s.proc.kill()
		s.proc = nil
	}
	s.mu.Unlock()
	if s.own {
		_ = os.RemoveAll(s.dir)
	}
}

func (s *Server) launch() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.launchLocked()
}

func (s *Server) launchLocked() error {
	args := []string{
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir,
		"--daemonize", "no", "--logfile", "",
	}
	args = append(args, s.args...)
	if s.conf != "" {
		args = append([]string{s.conf}, args...)
	}
	cmd := exec.Command(s.path, args...)
	cmd.Dir = s.dir
	log, err := os.OpenFile(filepath.Join(s.dir, "redis.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	setDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if ping(s.Addr()) == nil {
			s.proc = &process{cmd: cmd, exited: exited}
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("redis-server exited: %v: %s", err, tail(filepath.Join(s.dir, "redis.log")))
		case <-time.After(20 * time.Millisecond):
		}
	}
	_ = cmd.Process.Kill()
	<-exited
	return errors.New("redis-server did not answer within 5s")
}

func ping(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("unexpected answer %q", line)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 500 {
		b = b[len(b)-500:]
	}
	return strings.TrimSpace(string(b))
}

// LogTail returns the end of the server's log.
func (s *Server) LogTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.Contains(l, "SYNC") && !strings.Contains(l, "MASTER") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep[max(0, len(keep)-15):], "\n")
}
