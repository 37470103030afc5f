package testenv

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// pulsarHint tells a developer how to get the broker's jars.
const pulsarHint = "assemble it with `make pulsar` (tools/pulsar/build.sh, from Maven Central; `make test` runs it)"

// pulsarReadyTimeout bounds a broker's start: about 20 s on an idle
// machine, 45 s to 2 minutes on two cores shared with other test
// processes (load average 30).
const pulsarReadyTimeout = 5 * time.Minute

// pulsarJVMFlags are the flags Pulsar's bin/pulsar adds for `pulsar
// standalone` (and pulsar_env.sh's), less its log-file and functions
// settings: Netty's and BookKeeper's reflective access, ZooKeeper's
// buffer and 4lw settings, and the drivers that let BookKeeper keep its
// metadata in Pulsar's metadata store (RocksDB here).
var pulsarJVMFlags = []string{
	"-Dlog4j.shutdownHookEnabled=false",
	"-Djute.maxbuffer=10485760",
	"-Djava.net.preferIPv4Stack=true",
	"-Dio.netty.tryReflectionSetAccessible=true",
	"--add-opens", "java.base/java.io=ALL-UNNAMED",
	"--add-opens", "java.base/java.util.zip=ALL-UNNAMED",
	"--add-opens", "java.base/java.nio=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED",
	"--add-opens", "java.base/sun.net=ALL-UNNAMED",
	"--add-opens", "java.management/sun.management=ALL-UNNAMED",
	"-Dzookeeper.4lw.commands.whitelist=*",
	"-Dzookeeper.snapshot.trust.empty=true",
	"-Dzookeeper.tcpKeepAlive=true",
	"-Dzookeeper.clientTcpKeepAlive=true",
	"-Dbookkeeper.metadata.bookie.drivers=org.apache.pulsar.metadata.bookkeeper.PulsarMetadataBookieDriver",
	"-Dbookkeeper.metadata.client.drivers=org.apache.pulsar.metadata.bookkeeper.PulsarMetadataClientDriver",
	"-Dpulsar.allocator.exit_on_oom=true",
	"-Dio.netty.recycler.maxCapacityPerThread=4096",
}

// pulsarMemory bounds the broker's JVM (broker and bookie in one): heap
// and the direct memory Netty, the managed-ledger cache and the bookie's
// caches draw from.
var pulsarMemory = []string{"-Xms256m", "-Xmx512m", "-XX:MaxDirectMemorySize=256m"}

// pulsarStartup trades peak throughput, which tests do not need, for a
// quicker start: the C1 compiler only, and one GC thread.
var pulsarStartup = []string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"}

// Pulsar is a private standalone Apache Pulsar broker (PulsarVersion of
// the version table, internal/armada): one JVM running the broker and one
// bookie, its metadata in RocksDB, no functions worker and no stream
// storage, listening only on 127.0.0.1 with its data in the test's
// temporary directory.
type Pulsar struct {
	host       string
	brokerPort int
	webPort    int
	log        string
	// cmd is the broker's process, which has ended once exited is closed.
	cmd    *exec.Cmd
	exited <-chan struct{}
	// tokenKey is the HS256 key tokens are signed with; nil without
	// token authentication.
	tokenKey []byte
	// adminToken is the token of the broker's own client and the harness's
	// readiness checks.
	adminToken string
	// superUsers are the roles authorization admits; none without
	// authorization.
	superUsers []string
}

// PulsarOptions configure StartPulsarWithOptions.
type PulsarOptions struct {
	// TokenAuth turns on JWT authentication (AuthenticationProviderToken,
	// a random HS256 secret key): every client of the binary protocol
	// and the admin API must present a token Token signed; one without,
	// or with another, is refused. Authorization stays off.
	TokenAuth bool
	// TokenKey, with TokenAuth, is the HS256 key instead of a random one:
	// a broker configured as a composed one is, from its key Secret.
	TokenKey []byte
	// BrokerToken, with TokenAuth, is the token of the broker's own
	// client and of Admin instead of one Token makes for role admin.
	BrokerToken string
	// SuperUserRoles, if any, turn on authorization
	// (authorizationEnabled): only these roles may do anything, so a
	// token the key signed for another role is refused too.
	SuperUserRoles []string
	// Host, BrokerPort and WebPort are the address the broker listens on
	// and advertises, and its two ports, instead of 127.0.0.1 and free
	// ports: a real node's bridge address (node.HostAddress), where pods
	// reach it and clients follow its lookups, with Pulsar's usual 6650
	// and 8080, which the composed NetworkPolicies' egress rules name.
	Host                string
	BrokerPort, WebPort int
}

// pulsarPaths are the jars and the java a broker runs with.
type pulsarPaths struct {
	java string
	lib  string
}

// StartPulsar starts a private standalone Pulsar broker for the test and
// stops it on cleanup. It returns once the broker answers its health
// check and has created public/default. It fails the test if the broker's
// jars are not assembled (`make pulsar`) or java is missing.
func StartPulsar(tb TB) *Pulsar {
	tb.Helper()
	return StartPulsarWithOptions(tb, PulsarOptions{})
}

// StartPulsarWithOptions is StartPulsar with options.
func StartPulsarWithOptions(tb TB, o PulsarOptions) *Pulsar {
	tb.Helper()
	paths := pulsarJars(tb)
	dir := tb.TempDir()
	p := &Pulsar{
		host:       cmp.Or(o.Host, "127.0.0.1"),
		brokerPort: cmp.Or(o.BrokerPort, FreePort(tb)),
		webPort:    cmp.Or(o.WebPort, FreePort(tb)),
		log:        filepath.Join(dir, "pulsar.log"),
	}
	if o.TokenAuth {
		p.tokenKey = bytes.Clone(o.TokenKey)
		if p.tokenKey == nil {
			p.tokenKey = make([]byte, 32)
			if _, err := rand.Read(p.tokenKey); err != nil {
				tb.Fatalf("cannot generate the Pulsar token key: %v", err)
			}
		}
		p.adminToken = o.BrokerToken
		if p.adminToken == "" {
			p.adminToken = p.Token("admin")
		}
		p.superUsers = slices.Clone(o.SuperUserRoles)
	}
	if err := p.writeFiles(dir); err != nil {
		tb.Fatal(errors.Wrap(err, "cannot write the Pulsar broker's files"))
	}
	began := time.Now()
	if err := p.start(tb, dir, paths, FreePort(tb)); err != nil {
		tb.Fatal(errors.Wrap(err, "cannot start the Pulsar broker"))
	}
	tb.Logf("Pulsar %s standalone ready in %s at %s (admin %s)", armada.PulsarVersion, time.Since(began).Round(100*time.Millisecond), p.ServiceURL(), p.AdminURL())
	return p
}

// ServiceURL is the broker's binary-protocol URL, pulsar://127.0.0.1:<port>
// (or PulsarOptions' Host and BrokerPort).
func (p *Pulsar) ServiceURL() string {
	return "pulsar://" + net.JoinHostPort(p.host, strconv.Itoa(p.brokerPort))
}

// AdminURL is the broker's web service, http://127.0.0.1:<port>: the admin
// REST API (/admin/v2) and /metrics.
func (p *Pulsar) AdminURL() string {
	return "http://" + net.JoinHostPort(p.host, strconv.Itoa(p.webPort))
}

// Token returns a JWT for subject that the broker accepts: signed with its
// key, the subject in the "sub" claim Pulsar reads as the role. It panics
// on a broker without TokenAuth, where tokens mean nothing.
func (p *Pulsar) Token(subject string) string {
	if p.tokenKey == nil {
		panic("testenv: Token on a Pulsar broker started without TokenAuth")
	}
	return armada.PulsarToken(p.tokenKey, subject)
}

// State says whether the broker's process still runs, or how it ended:
// for a failure message when the broker does not answer.
func (p *Pulsar) State() string {
	select {
	case <-p.exited:
		return "the broker's process has ended (" + p.cmd.ProcessState.String() + ")"
	default:
		return "the broker's process runs"
	}
}

// Log returns the broker's log output.
func (p *Pulsar) Log() string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return fmt.Sprintf("(cannot read the pulsar log: %v)", err)
	}
	return string(b)
}

// pulsarJars finds java and the jars `make pulsar` assembled, failing the
// test with instructions if either is missing.
func pulsarJars(tb TB) pulsarPaths {
	tb.Helper()
	root, err := testutil.ToolDir("PULSAR_BIN_ROOT")
	if err != nil {
		tb.Fatalf("%v", err)
	}
	p := pulsarPaths{lib: filepath.Join(root, "pulsar-"+armada.PulsarVersion, "lib")}
	if fi, err := os.Stat(p.lib); err != nil || !fi.IsDir() {
		tb.Fatalf("Pulsar's jars are missing at %s: %s", p.lib, pulsarHint)
	}
	p.java = javaPath(tb)
	return p
}

// javaPath is $JAVA_HOME/bin/java if JAVA_HOME is set, else java on PATH.
// Pulsar 4.0's broker needs Java 17 or later.
func javaPath(tb TB) string {
	tb.Helper()
	if home := os.Getenv("JAVA_HOME"); home != "" {
		j, err := exec.LookPath(filepath.Join(home, "bin", "java"))
		if err != nil {
			tb.Fatalf("JAVA_HOME is %s, but it has no bin/java: %v", home, err)
		}
		return j
	}
	j, err := exec.LookPath("java")
	if err != nil {
		tb.Fatalf("java is not on PATH: the Pulsar broker needs Java 17 (apt-get install -y openjdk-17-jre-headless), or set JAVA_HOME")
	}
	return j
}

// pulsarConfig is the broker's standalone.conf: what differs from
// ServiceConfiguration's defaults. PulsarStandaloneStarter requires the
// file and also loads it as the bookie's ServerConfiguration.
func (p *Pulsar) pulsarConfig(dir string) string {
	kv := [][2]string{
		{"clusterName", "standalone"},
		{"bindAddress", p.host},
		{"advertisedAddress", p.host},
		{"brokerServicePort", strconv.Itoa(p.brokerPort)},
		{"webServicePort", strconv.Itoa(p.webPort)},
		// One bookie: every ledger is written once.
		{"managedLedgerDefaultEnsembleSize", "1"},
		{"managedLedgerDefaultWriteQuorum", "1"},
		{"managedLedgerDefaultAckQuorum", "1"},
		{"functionsWorkerEnabled", "false"},
		{"narExtractionDirectory", filepath.Join(dir, "nar")},
		// Tests that share a broker delete what they created.
		{"forceDeleteTenantAllowed", "true"},
		{"forceDeleteNamespaceAllowed", "true"},
		// The bookie (BKCluster) binds only the loopback interface and
		// takes the port given by --bookkeeper-port only when ephemeral
		// ports are allowed; otherwise it picks its own.
		{"listeningInterface", "lo"},
		{"allowEphemeralPorts", "true"},
		// The bookie turns read-only when the disk holding its ledgers is
		// 95% full (BookKeeper's default), and the broker then never
		// becomes healthy ("Not enough non-faulty bookies"): a test
		// broker writes a few MB, so only a truly full disk stops it.
		{"diskUsageThreshold", "0.999"},
		{"diskUsageWarnThreshold", "0.998"},
		{"diskUsageLwmThreshold", "0.998"},
	}
	if p.tokenKey != nil {
		kv = append(kv, [][2]string{
			{"authenticationEnabled", "true"},
			{"authenticationProviders", "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"},
			{"tokenSecretKey", "data:;base64," + base64.StdEncoding.EncodeToString(p.tokenKey)},
			// The broker's own client (standalone creates public/default
			// through it) authenticates like any other.
			{"brokerClientAuthenticationPlugin", "org.apache.pulsar.client.impl.auth.AuthenticationToken"},
			{"brokerClientAuthenticationParameters", "token:" + p.adminToken},
		}...)
	}
	if len(p.superUsers) > 0 {
		kv = append(kv, [][2]string{
			{"authorizationEnabled", "true"},
			{"superUserRoles", strings.Join(p.superUsers, ",")},
		}...)
	}
	var b strings.Builder
	b.WriteString("# Written by internal/harness/testenv for one test's standalone broker.\n")
	for _, e := range kv {
		fmt.Fprintf(&b, "%s=%s\n", e[0], e[1])
	}
	return b.String()
}

// pulsarLog4j is the broker's log4j2 configuration: INFO to its log file
// (stdout).
const pulsarLog4j = `status = warn
appender.console.type = Console
appender.console.name = Console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %-5level [%t] %c{1} - %msg%n
rootLogger.level = info
rootLogger.appenderRef.console.ref = Console
`

// writeFiles writes the broker's standalone.conf and log configuration.
func (p *Pulsar) writeFiles(dir string) error {
	files := []struct {
		name, content string
		mode          os.FileMode
	}{
		{"standalone.conf", p.pulsarConfig(dir), 0o600},
		{"log4j2.properties", pulsarLog4j, 0o600},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.content), f.mode); err != nil {
			return errors.Wrapf(err, "cannot write %s", f.name)
		}
	}
	return nil
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// start runs the broker in dir (its working directory, so every relative
// path Pulsar uses stays in it) and waits until it is ready.
func (p *Pulsar) start(tb TB, dir string, paths pulsarPaths, bookiePort int) error {
	tb.Helper()
	// RocksDB and Netty unpack their native libraries into java.io.tmpdir
	// and leave them when the broker is killed: keep them in the test's
	// directory, which goes with the test.
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return errors.Wrap(err, "cannot create the broker's temporary directory")
	}
	args := append(append(append([]string{}, pulsarMemory...), pulsarStartup...), pulsarJVMFlags...)
	args = append(args,
		"-Djava.io.tmpdir="+tmp,
		"-Dlog4j.configurationFile="+filepath.Join(dir, "log4j2.properties"),
		"-cp", filepath.Join(paths.lib, "*"),
		"org.apache.pulsar.PulsarStandaloneStarter",
		"--config", filepath.Join(dir, "standalone.conf"),
		"--no-functions-worker", "--no-stream-storage",
		"--metadata-dir", filepath.Join(dir, "data", "metadata"),
		"--bookkeeper-dir", filepath.Join(dir, "data", "bookkeeper"),
		"--bookkeeper-port", strconv.Itoa(bookiePort),
	)
	logf, err := os.Create(p.log)
	if err != nil {
		return errors.Wrap(err, "cannot create the pulsar log")
	}
	cmd := exec.CommandContext(tb.Context(), paths.java, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = ProcessGroupAttr()
	exited, err := startInGroup(tb, cmd, logf)
	if err != nil {
		return errors.Wrap(err, "cannot run java")
	}
	p.cmd, p.exited = cmd, exited

	deadline := time.Now().Add(pulsarReadyTimeout)
	for {
		err := p.ready(tb.Context())
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return errors.Errorf("the broker exited; log:\n%s", p.Log())
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.Errorf("the broker was not ready within %s (last: %v); log:\n%s", pulsarReadyTimeout, err, p.Log())
		}
	}
}

// ready checks the broker's health check, which produces and consumes a
// message on a topic of its own, and that standalone has created the
// public/default namespace clients use by default.
func (p *Pulsar) ready(ctx context.Context) error {
	if _, err := p.get(ctx, "/admin/v2/brokers/health"); err != nil {
		return err
	}
	body, err := p.get(ctx, "/admin/v2/namespaces/public")
	if err != nil {
		return err
	}
	if !strings.Contains(body, `"public/default"`) {
		return errors.Errorf("namespace public/default does not exist yet (public has %s)", body)
	}
	return nil
}

// get returns the body of a 200 answer to GET path on the admin API.
func (p *Pulsar) get(ctx context.Context, path string) (string, error) {
	return p.Admin(ctx, http.MethodGet, path)
}

// Admin calls the admin REST API, e.g. GET
// /admin/v2/persistent/t/ns/topic/partitions, as the broker's admin when it
// has TokenAuth, and returns the body of a 2xx answer.
func (p *Pulsar) Admin(ctx context.Context, method, path string) (string, error) {
	code, body, err := p.Call(ctx, AdminCall{Method: method, Path: path, AsAdmin: true})
	if err != nil {
		return "", err
	}
	if code < 200 || code > 299 {
		return "", errors.Errorf("%s %s: %d %s: %s", method, path, code, http.StatusText(code), body)
	}
	return body, nil
}

// AdminCall is one request to the admin REST API.
type AdminCall struct {
	// Method and Path, e.g. PUT /admin/v2/tenants/armada.
	Method, Path string
	// Body is sent as JSON.
	Body string
	// Token is sent as the bearer token when it is not empty.
	Token string
	// AsAdmin sends the broker's admin token instead, when it has
	// TokenAuth.
	AsAdmin bool
}

// Call makes c and returns the answer's status code and body, whatever the
// status: an error only when no answer came.
func (p *Pulsar) Call(ctx context.Context, c AdminCall) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, c.Method, p.AdminURL()+c.Path, strings.NewReader(c.Body))
	if err != nil {
		return 0, "", errors.Wrapf(err, "cannot build %s %s", c.Method, c.Path)
	}
	// JSON, as the composed topic-init Job's curl sends every call.
	req.Header.Set("Content-Type", "application/json")
	token := c.Token
	if c.AsAdmin {
		token = p.adminToken
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", errors.Wrapf(err, "%s %s failed", c.Method, c.Path)
	}
	defer resp.Body.Close() //nolint:errcheck // Only read from.
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", errors.Wrapf(err, "cannot read %s %s", c.Method, c.Path)
	}
	return resp.StatusCode, string(body), nil
}
