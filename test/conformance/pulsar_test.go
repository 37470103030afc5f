package conformance

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// pulsarBroker stands in for a Pulsar broker at the address a component's
// rendered pulsar.URL resolves to (see names): it reads the first command
// of Pulsar's binary protocol, which a client sends as soon as it
// connects, records the CONNECT's authentication, and closes the
// connection, as a broker that refuses it would. Armada's Pulsar client
// then retries, as it does when no broker is up. Each component gets its
// own, so what it sent is known per component.
type pulsarBroker struct {
	Addr string

	mu       sync.Mutex
	connects []pulsarConnect
}

// pulsarConnect is what one CONNECT command carried.
type pulsarConnect struct {
	ClientVersion  string
	AuthMethodName string
	AuthData       string
	// Err is set if the bytes were not a CONNECT.
	Err string
}

func startPulsarBroker(t *testing.T, addr string) *pulsarBroker {
	t.Helper()
	lis, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatalf("cannot listen on %s, standing in for the Pulsar broker: %v", addr, err)
	}
	t.Cleanup(func() { _ = lis.Close() })
	b := &pulsarBroker{Addr: addr}
	go func() {
		for {
			conn, err := lis.Accept()
			if err != nil {
				return
			}
			go b.serve(conn)
		}
	}()
	return b
}

func (b *pulsarBroker) serve(conn net.Conn) {
	defer func() { _ = conn.Close() }()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	c, err := readConnect(bufio.NewReader(conn))
	if err != nil {
		c.Err = err.Error()
	}
	b.mu.Lock()
	b.connects = append(b.connects, c)
	b.mu.Unlock()
}

// Connects returns the CONNECTs received so far.
func (b *pulsarBroker) Connects() []pulsarConnect {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.connects)
}

// Pulsar's frames are [total size][command size][BaseCommand], sizes
// big-endian uint32 (PulsarApi.proto, "simple commands"). BaseCommand's
// field 1 is its type, CONNECT = 2, field 2 the CommandConnect, whose
// fields 1, 3 and 5 are client_version, auth_data and auth_method_name.
const (
	pulsarMaxFrame      = 5 << 20
	pulsarTypeConnect   = 2
	baseCommandType     = 1
	baseCommandConnect  = 2
	connectClientVer    = 1
	connectAuthData     = 3
	connectAuthMethName = 5
)

func readConnect(r io.Reader) (pulsarConnect, error) {
	var sizes [8]byte
	if _, err := io.ReadFull(r, sizes[:]); err != nil {
		return pulsarConnect{}, errors.Wrap(err, "cannot read a frame header")
	}
	total, size := binary.BigEndian.Uint32(sizes[:4]), binary.BigEndian.Uint32(sizes[4:])
	if total > pulsarMaxFrame || size+4 > total {
		return pulsarConnect{}, errors.Errorf("frame sizes %d/%d are not a Pulsar command", total, size)
	}
	cmd := make([]byte, size)
	if _, err := io.ReadFull(r, cmd); err != nil {
		return pulsarConnect{}, errors.Wrap(err, "cannot read a command")
	}
	var typ uint64
	var connect []byte
	if err := eachField(cmd, func(num int, v uint64, b []byte) {
		switch num {
		case baseCommandType:
			typ = v
		case baseCommandConnect:
			connect = b
		}
	}); err != nil {
		return pulsarConnect{}, err
	}
	if typ != pulsarTypeConnect || connect == nil {
		return pulsarConnect{}, errors.Errorf("first command has type %d, not CONNECT", typ)
	}
	var c pulsarConnect
	err := eachField(connect, func(num int, _ uint64, b []byte) {
		switch num {
		case connectClientVer:
			c.ClientVersion = string(b)
		case connectAuthData:
			c.AuthData = string(b)
		case connectAuthMethName:
			c.AuthMethodName = string(b)
		}
	})
	return c, err
}

// eachField calls f with every field of a protobuf message: its number
// and its value, a varint or bytes.
func eachField(msg []byte, f func(num int, v uint64, b []byte)) error {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return errors.Wrap(protowire.ParseError(n), "cannot parse a Pulsar command")
		}
		msg = msg[n:]
		switch typ {
		case protowire.VarintType:
			v, m := protowire.ConsumeVarint(msg)
			if m < 0 {
				return errors.Wrap(protowire.ParseError(m), "cannot parse a Pulsar command")
			}
			f(int(num), v, nil)
			n = m
		case protowire.BytesType:
			b, m := protowire.ConsumeBytes(msg)
			if m < 0 {
				return errors.Wrap(protowire.ParseError(m), "cannot parse a Pulsar command")
			}
			f(int(num), 0, b)
			n = m
		default:
			n = protowire.ConsumeFieldValue(num, typ, msg)
			if n < 0 {
				return errors.Wrap(protowire.ParseError(n), "cannot parse a Pulsar command")
			}
		}
		msg = msg[n:]
	}
	return nil
}

// checkPulsar fails unless the component's broker received a CONNECT
// within timeout that authenticates exactly as the user's Secret says: the
// token from spec.pulsar.tokenSecretRef with method "token", or no
// authentication without one.
func checkPulsar(o *outcome, b *pulsarBroker, at, token string, timeout time.Duration) {
	if b == nil {
		return
	}
	deadline := time.Now().Add(timeout)
	for len(b.Connects()) == 0 {
		if time.Now().After(deadline) {
			o.errorf("never connected to the example's Pulsar broker at %s (the test's listener for it: %s); see its pulsar.URL", at, b.Addr)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	c := b.Connects()[0]
	switch {
	case c.Err != "":
		o.errorf("sent the Pulsar broker something other than a CONNECT: %s", c.Err)
	case token == "" && (c.AuthMethodName != "" || c.AuthData != ""):
		o.errorf("authenticated to Pulsar with method %q, but the claim gives no token", c.AuthMethodName)
	case token != "" && (c.AuthMethodName != "token" || c.AuthData != token):
		o.errorf("authenticated to Pulsar with method %q and %d bytes of auth data, not the token from spec.pulsar.tokenSecretRef", c.AuthMethodName, len(c.AuthData))
	case token != "":
		o.Notes = append(o.Notes, "sent Pulsar a CONNECT with the token from spec.pulsar.tokenSecretRef ("+c.ClientVersion+")")
	default:
		o.Notes = append(o.Notes, "sent Pulsar an unauthenticated CONNECT, as the claim gives no token ("+c.ClientVersion+")")
	}
}
