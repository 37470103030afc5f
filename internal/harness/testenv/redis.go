package testenv

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Redis is a private Redis server listening on 127.0.0.1 without
// persistence.
type Redis struct {
	// Host the server listens on, always 127.0.0.1.
	Host string
	// Port the server listens on.
	Port int
	// Password clients must authenticate with; empty if none is required.
	Password string

	log string
	// kill stops the server with SIGKILL and waits until it has exited.
	kill func()
}

// StartRedis starts a Redis server that requires a random password, and
// stops it when the test ends. It fails the test if redis-server is missing.
func StartRedis(tb TB) *Redis {
	tb.Helper()
	return StartRedisWithPassword(tb, RandomPassword(tb))
}

// StartRedisWithPassword starts a Redis server that requires password, or no
// password if it is empty, and stops it when the test ends. It fails the test
// if redis-server is missing.
func StartRedisWithPassword(tb TB, password string) *Redis {
	tb.Helper()
	bin := lookPath(tb, "redis-server")
	dir := tb.TempDir()
	r := &Redis{Host: "127.0.0.1", Port: FreePort(tb), Password: password, log: filepath.Join(dir, "redis.log")}
	if err := r.start(tb, bin, dir); err != nil {
		tb.Fatal(errors.Wrap(err, "cannot start redis"))
	}
	return r
}

// StartRedisArgs starts redis-server with args, a configuration under
// test such as the one the function composes, followed by the loopback
// address and a free port; it stops it when the test ends. Kill stops it
// as a crash would, so a restart in the same directory shows what the
// configuration persists.
func StartRedisArgs(tb TB, password string, args []string) *Redis {
	tb.Helper()
	bin := lookPath(tb, "redis-server")
	logDir := tb.TempDir()
	r := &Redis{Host: "127.0.0.1", Port: FreePort(tb), Password: password, log: filepath.Join(logDir, "redis.log")}
	args = append(append([]string{}, args...), "--port", strconv.Itoa(r.Port), "--bind", r.Host)
	if err := r.run(tb, bin, args); err != nil {
		tb.Fatal(errors.Wrap(err, "cannot start redis"))
	}
	return r
}

// Kill stops the server with SIGKILL, as a crash or an evicted pod would,
// and waits until it has exited.
func (r *Redis) Kill() {
	if r.kill != nil {
		r.kill()
	}
}

func (r *Redis) start(tb TB, bin, dir string) error {
	tb.Helper()
	args := []string{"--port", strconv.Itoa(r.Port), "--bind", r.Host, "--save", "", "--appendonly", "no", "--dir", dir}
	if r.Password != "" {
		args = append(args, "--requirepass", r.Password)
	}
	return r.run(tb, bin, args)
}

// run starts redis-server with args and waits until it answers PING.
func (r *Redis) run(tb TB, bin string, args []string) error {
	tb.Helper()
	logf, err := os.Create(r.log)
	if err != nil {
		return errors.Wrap(err, "cannot create the redis log")
	}
	cmd := exec.CommandContext(tb.Context(), bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = ProcessGroupAttr()
	exited, err := startInGroup(tb, cmd, logf)
	if err != nil {
		return errors.Wrap(err, "cannot run redis-server")
	}
	r.kill = func() {
		KillProcessGroup(cmd.Process)
		<-exited
	}

	deadline := time.Now().Add(15 * time.Second)
	for {
		got, err := r.Do(r.Password, "PING")
		if err == nil && got == "PONG" {
			return nil
		}
		select {
		case <-exited:
			return errors.Errorf("redis-server exited; log:\n%s", r.Log())
		default:
		}
		if time.Now().After(deadline) {
			return errors.Errorf("redis-server did not answer PING (last error: %v); log:\n%s", err, r.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Addr is the server's host:port.
func (r *Redis) Addr() string {
	return net.JoinHostPort(r.Host, strconv.Itoa(r.Port))
}

// Log returns the server's log output.
func (r *Redis) Log() string {
	b, err := os.ReadFile(r.log)
	if err != nil {
		return fmt.Sprintf("(cannot read redis log: %v)", err)
	}
	return string(b)
}

// Do opens a connection, authenticates with password unless it is empty,
// sends one command and returns its reply: the text of a simple or bulk
// string, or the decimal value of an integer. An error reply is an error.
func (r *Redis) Do(password string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", r.Addr())
	if err != nil {
		return "", errors.Wrap(err, "cannot connect to redis")
	}
	defer conn.Close() //nolint:errcheck // Nothing is written after the reply.
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	rd := bufio.NewReader(conn)
	if password != "" {
		if _, err := roundTrip(conn, rd, "AUTH", password); err != nil {
			return "", errors.Wrap(err, "AUTH failed")
		}
	}
	reply, err := roundTrip(conn, rd, args...)
	return reply, errors.Wrapf(err, "%s failed", strings.Join(args[:1], ""))
}

// roundTrip writes one RESP command and reads a scalar reply.
func roundTrip(conn net.Conn, rd *bufio.Reader, args ...string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		return "", errors.Wrap(err, "cannot write to redis")
	}
	line, err := rd.ReadString('\n')
	if err != nil {
		return "", errors.Wrap(err, "cannot read from redis")
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", errors.New("empty reply from redis")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", errors.New(line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", errors.Wrapf(err, "invalid redis bulk string header %q", line)
		}
		if n < 0 { // A nil reply.
			return "", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return "", errors.Wrap(err, "cannot read from redis")
		}
		return string(buf[:n]), nil
	default:
		return "", errors.Errorf("unsupported redis reply %q", line)
	}
}
