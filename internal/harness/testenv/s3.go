package testenv

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// VersityGWVersion is the versitygw release tools/versitygw builds.
const VersityGWVersion = "v1.8.0"

// S3 is a private S3-compatible server on 127.0.0.1: versitygw's POSIX
// gateway over a directory, each bucket a directory in it.
type S3 struct {
	// Endpoint is the server's http://127.0.0.1:<port>.
	Endpoint string
	// AccessKey and SecretKey are its only credentials.
	AccessKey, SecretKey string

	root, log string
}

// ToolBin is the binary `make NAME` builds into the tool cache at
// version (tools/NAME/build.sh), or $NAME_BIN (upper case) when set. It
// fails the test if the binary is missing.
func ToolBin(tb TB, name, version string) string {
	tb.Helper()
	bin, err := testutil.Tool(strings.ToUpper(name)+"_BIN", name, version)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	if fi, err := os.Stat(bin); err != nil || fi.Mode()&0o111 == 0 {
		tb.Fatalf("%s is missing: build it with `make %s`", bin, name)
	}
	return bin
}

// StartS3 starts versitygw with random credentials, and stops it when the
// test ends. It fails the test if the binary `make versitygw` builds is
// missing.
func StartS3(tb TB) *S3 {
	tb.Helper()
	bin := ToolBin(tb, "versitygw", VersityGWVersion)
	dir := tb.TempDir()
	s := &S3{AccessKey: "ak" + RandomPassword(tb)[:16], SecretKey: RandomPassword(tb), root: filepath.Join(dir, "root"), log: filepath.Join(dir, "versitygw.log")}
	if err := os.Mkdir(s.root, 0o700); err != nil {
		tb.Fatal(errors.Wrap(err, "cannot create the S3 root"))
	}
	// Object metadata (multipart parts' ETags among it) in a sidecar
	// directory: the test's filesystem may lack user xattrs, and without
	// metadata multipart uploads, which Barman uses for WAL files, fail.
	meta := filepath.Join(dir, "meta")
	if err := os.Mkdir(meta, 0o700); err != nil {
		tb.Fatal(errors.Wrap(err, "cannot create the S3 metadata directory"))
	}
	port := FreePort(tb)
	s.Endpoint = "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	logf, err := os.Create(s.log)
	if err != nil {
		tb.Fatal(errors.Wrap(err, "cannot create the versitygw log"))
	}
	cmd := exec.CommandContext(tb.Context(), bin, "--access", s.AccessKey, "--secret", s.SecretKey,
		"--port", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), "posix", "--sidecar", meta, s.root)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = ProcessGroupAttr()
	exited, err := startInGroup(tb, cmd, logf)
	if err != nil {
		tb.Fatal(errors.Wrap(err, "cannot run versitygw"))
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.Endpoint, http.NoBody)
		rsp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			_ = rsp.Body.Close()
			return s
		}
		select {
		case <-exited:
			tb.Fatalf("versitygw exited; log:\n%s", s.Log())
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("versitygw did not answer (last error: %v); log:\n%s", err, s.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// CreateBucket creates a bucket: the POSIX gateway serves each directory
// of its root as one.
func (s *S3) CreateBucket(tb TB, name string) {
	tb.Helper()
	if err := os.Mkdir(filepath.Join(s.root, name), 0o700); err != nil {
		tb.Fatal(errors.Wrapf(err, "cannot create bucket %s", name))
	}
}

// ObjectFile is the file the gateway keeps an object's content in: a test
// that damages an object writes it.
func (s *S3) ObjectFile(bucket, key string) string {
	return filepath.Join(s.root, bucket, filepath.FromSlash(key))
}

// Log returns the server's log output.
func (s *S3) Log() string {
	b, err := os.ReadFile(s.log)
	if err != nil {
		return "(cannot read the versitygw log: " + err.Error() + ")"
	}
	return string(b)
}

// Keys lists the keys of the objects in a bucket, read from the gateway's
// directory, sorted.
func (s *S3) Keys(tb TB, bucket string) []string {
	tb.Helper()
	root := filepath.Join(s.root, bucket)
	var keys []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir // the gateway's own temporary files
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(root, path)
			keys = append(keys, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		tb.Fatal(errors.Wrapf(err, "cannot list bucket %s", bucket))
	}
	sort.Strings(keys)
	return keys
}
