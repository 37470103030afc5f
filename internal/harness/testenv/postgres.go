package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// PostgresBinDir holds the Debian PostgreSQL 15 server and client binaries.
const PostgresBinDir = "/usr/lib/postgresql/15/bin"

// postgresUser owns the data directory and runs the server when the test
// runs as root, because initdb and postgres refuse to run as root.
const postgresUser = "postgres"

// Postgres is a private PostgreSQL 15 server listening on 127.0.0.1.
//
// Connections over TCP need a password (scram-sha-256), so a client with a
// wrong or missing password fails just as it would against a real server.
// TLS is enabled with a self-signed certificate, so clients configured with
// sslmode disable, prefer or require all connect.
type Postgres struct {
	// Host the server listens on, always 127.0.0.1.
	Host string
	// Port the server listens on.
	Port int
	// SuperuserPassword is the password of the superuser "postgres".
	SuperuserPassword string

	dir, data string
}

// StartPostgres initialises and starts a PostgreSQL server in a fresh
// directory under os.TempDir, and stops it and removes the directory when the
// test ends. When the test runs as root, initdb and pg_ctl run as the
// postgres user, which owns the directory. It fails the test if the
// PostgreSQL binaries are missing.
func StartPostgres(tb TB) *Postgres {
	tb.Helper()
	return StartPostgresWith(tb, PostgresOptions{})
}

// PostgresOptions change how StartPostgresWith starts a server.
type PostgresOptions struct {
	// Settings are extra server settings, name=value each.
	Settings []string
	// Data is an existing data directory to start, such as a restored base
	// backup, instead of one initdb creates; it is handed to the postgres
	// user. SuperuserPassword is then its superuser's password.
	Data              string
	SuperuserPassword string
}

// StartPostgresWith is StartPostgres with options.
func StartPostgresWith(tb TB, opt PostgresOptions) *Postgres {
	tb.Helper()
	for _, b := range []string{"initdb", "pg_ctl", "postgres", "psql"} {
		requireExecutable(tb, filepath.Join(PostgresBinDir, b))
	}
	p := &Postgres{Host: "127.0.0.1", SuperuserPassword: RandomPassword(tb), data: opt.Data}
	if opt.SuperuserPassword != "" {
		p.SuperuserPassword = opt.SuperuserPassword
	}
	if err := p.start(tb, opt.Settings); err != nil {
		tb.Fatal(errors.Wrap(err, "cannot start postgres"))
	}
	return p
}

// DataDir is the server's data directory.
func (p *Postgres) DataDir() string { return p.data }

func (p *Postgres) start(tb TB, settings []string) error {
	tb.Helper()
	// Not tb.TempDir: its parent directory is private to the test's user,
	// and the postgres user must reach this one.
	dir, err := os.MkdirTemp("", "armada-pg-")
	if err != nil {
		return errors.Wrap(err, "cannot create postgres directory")
	}
	p.dir = dir
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })

	cert, key := SelfSignedCert(tb)
	files := map[string][]byte{
		"pwfile":     []byte(p.SuperuserPassword + "\n"),
		"server.crt": cert,
		"server.key": key,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return errors.Wrapf(err, "cannot write %s", name)
		}
	}
	if err := chownToPostgres(dir); err != nil {
		return err
	}

	data := p.data
	if data == "" {
		data = filepath.Join(dir, "data")
		if err := runCmd(asPostgres(tb.Context(), "initdb", "-D", data, "-U", "postgres",
			"--auth-local=trust", "--auth-host=scram-sha-256", "--pwfile="+filepath.Join(dir, "pwfile"),
			"-E", "UTF8", "--locale=C", "--no-instructions")); err != nil {
			return errors.Wrap(err, "cannot initialise the data directory")
		}
		p.data = data
	} else if err := chownToPostgres(data); err != nil {
		return err
	}

	p.Port = FreePort(tb)
	args := []string{
		"-p", strconv.Itoa(p.Port),
		"-k", dir,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "ssl=on",
		"-c", "ssl_cert_file=" + filepath.Join(dir, "server.crt"),
		"-c", "ssl_key_file=" + filepath.Join(dir, "server.key"),
		// Durability is pointless for a throwaway server; speed is not.
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
	}
	for _, kv := range settings {
		args = append(args, "-c", shellQuote(kv))
	}
	opts := strings.Join(args, " ")
	// Registered before start so a half-started server is stopped too.
	tb.Cleanup(func() {
		// The test's context is done by the time cleanups run.
		_ = runCmd(asPostgres(context.Background(), "pg_ctl", "-D", data, "stop", "-m", "immediate", "-w"))
	})
	if err := runCmd(asPostgres(tb.Context(), "pg_ctl", "-D", data, "-o", opts,
		"-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start")); err != nil {
		return errors.Wrapf(err, "pg_ctl start failed; server log:\n%s", p.Log())
	}
	return nil
}

// Log returns the server's log file.
func (p *Postgres) Log() string {
	b, err := os.ReadFile(filepath.Join(p.dir, "log"))
	if err != nil {
		return fmt.Sprintf("(cannot read postgres log: %v)", err)
	}
	return string(b)
}

// Exec runs sql with psql as the superuser in database db over TCP, and
// returns psql's unaligned, tuples-only output.
func (p *Postgres) Exec(db, sql string) (string, error) {
	return p.ExecAs("postgres", p.SuperuserPassword, db, sql)
}

// ExecAs runs sql with psql as role, authenticating with password, in
// database db over TCP, and returns psql's unaligned, tuples-only output.
func (p *Postgres) ExecAs(role, password, db, sql string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(PostgresBinDir, "psql"), "-X", "-w", "-q", "-A", "-t",
		"-v", "ON_ERROR_STOP=1", "-h", p.Host, "-p", strconv.Itoa(p.Port), "-U", role, "-d", db, "-c", sql)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+password, "PGSSLMODE=prefer", "PGCONNECT_TIMEOUT=10")
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok { //nolint:errorlint // Output returns an unwrapped *ExitError.
			stderr = strings.TrimSpace(string(ee.Stderr))
		}
		return "", errors.Wrapf(err, "psql -d %s -c %q failed: %s", db, sql, stderr)
	}
	return strings.TrimSpace(string(out)), nil
}

// MustExec is Exec that fails the test on error.
func (p *Postgres) MustExec(tb TB, db, sql string) string {
	tb.Helper()
	out, err := p.Exec(db, sql)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// CreateRole creates a role that can log in with password.
func (p *Postgres) CreateRole(tb TB, name, password string) {
	tb.Helper()
	p.MustExec(tb, "postgres", fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD %s", QuoteIdent(name), QuoteLiteral(password)))
}

// CreateDatabase creates a database owned by owner.
func (p *Postgres) CreateDatabase(tb TB, name, owner string) {
	tb.Helper()
	p.MustExec(tb, "postgres", fmt.Sprintf("CREATE DATABASE %s OWNER %s", QuoteIdent(name), QuoteIdent(owner)))
}

// QuoteIdent quotes a PostgreSQL identifier.
func QuoteIdent(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// QuoteLiteral quotes a PostgreSQL string literal.
func QuoteLiteral(s string) string {
	return `'` + strings.ReplaceAll(s, `'`, `''`) + `'`
}

// asPostgres returns a command running a PostgreSQL binary, as the postgres
// user when the test runs as root.
func asPostgres(ctx context.Context, name string, args ...string) *exec.Cmd {
	bin := filepath.Join(PostgresBinDir, name)
	if os.Geteuid() != 0 {
		return exec.CommandContext(ctx, bin, args...)
	}
	return exec.CommandContext(ctx, "runuser", append([]string{"-u", postgresUser, "--", bin}, args...)...)
}

// chownToPostgres hands dir and its files to the postgres user when the test
// runs as root.
func chownToPostgres(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup(postgresUser)
	if err != nil {
		return errors.Wrapf(err, "cannot find the %s user: %s", postgresUser, installHint)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return errors.Wrap(filepath.Walk(dir, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, gid)
	}), "cannot hand the postgres directory to the postgres user")
}
