package testenv

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/armadaproject/armada-crossplane/internal/harness/freeport"
)

func TestPostgres(t *testing.T) {
	pg := StartPostgres(t)
	pg.CreateRole(t, "armada", "s3cret'pw")
	pg.CreateDatabase(t, "lookout", "armada")

	type want struct {
		out string
		err bool
	}
	cases := map[string]struct {
		reason   string
		user     string
		password string
		db       string
		want     want
	}{
		"RightPassword": {
			reason:   "The role connects over TCP with its password and owns its database.",
			user:     "armada",
			password: "s3cret'pw",
			db:       "lookout",
			want:     want{out: "armada"},
		},
		"WrongPassword": {
			reason:   "TCP connections use scram-sha-256, so a wrong password must fail.",
			user:     "armada",
			password: "wrong",
			db:       "lookout",
			want:     want{err: true},
		},
		"NoPassword": {
			reason: "TCP connections use scram-sha-256, so a missing password must fail.",
			user:   "armada",
			db:     "lookout",
			want:   want{err: true},
		},
		"Superuser": {
			reason:   "The superuser connects with its generated password.",
			user:     "postgres",
			password: pg.SuperuserPassword,
			db:       "lookout",
			want:     want{out: "armada"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := pg.ExecAs(tc.user, tc.password, tc.db,
				"SELECT pg_catalog.pg_get_userbyid(datdba) FROM pg_database WHERE datname = current_database()")
			got := want{out: out, err: err != nil}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nExecAs(...): -want, +got:\n%s\nerror: %v", tc.reason, diff, err)
			}
		})
	}

	t.Run("TLS", func(t *testing.T) {
		out, err := pg.Exec("postgres", "SHOW ssl")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff("on", out); diff != "" {
			t.Errorf("SHOW ssl: -want, +got:\n%s", diff)
		}
	})
}

func TestRedis(t *testing.T) {
	r := StartRedis(t)

	cases := map[string]struct {
		reason   string
		password string
		args     []string
		want     string
		wantErr  string
	}{
		"RightPassword": {
			reason:   "A client with the password can use the server.",
			password: r.Password,
			args:     []string{"PING"},
			want:     "PONG",
		},
		"SelectDB": {
			reason:   "Armada uses database 1 by default.",
			password: r.Password,
			args:     []string{"SELECT", "1"},
			want:     "OK",
		},
		"WrongPassword": {
			reason:   "A wrong password must be rejected.",
			password: "wrong",
			args:     []string{"PING"},
			wantErr:  "WRONGPASS",
		},
		"NoPassword": {
			reason:  "A client without a password must be rejected.",
			args:    []string{"PING"},
			wantErr: "NOAUTH",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := r.Do(tc.password, tc.args...)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nDo(...): -want, +got:\n%s", tc.reason, diff)
			}
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if tc.wantErr == "" && gotErr != "" || !strings.Contains(gotErr, tc.wantErr) {
				t.Errorf("%s\nDo(...): want error containing %q, got %q", tc.reason, tc.wantErr, gotErr)
			}
		})
	}
}

// TestFreePort checks that FreePort's ports lie below the kernel's
// ephemeral range, where outgoing connections never take them, differ, and
// can be bound.
func TestFreePort(t *testing.T) {
	lo, hi := freeport.Range()
	seen := map[int]bool{}
	for range 20 {
		p := FreePort(t)
		if seen[p] {
			t.Errorf("FreePort(...) = %d twice", p)
		}
		seen[p] = true
		if p < lo || p >= hi {
			t.Errorf("FreePort(...) = %d, want a port in [%d, %d)", p, lo, hi)
		}
		l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("cannot listen on FreePort's %d: %v", p, err)
		}
		_ = l.Close()
	}
}
