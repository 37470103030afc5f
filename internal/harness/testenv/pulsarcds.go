package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// pulsarAdminMain is pulsar-admin's main class (pulsar-client-tools).
const pulsarAdminMain = "org.apache.pulsar.admin.cli.PulsarAdminTool"

// pulsarAdminArchiveFlags use a class-data archive quietly: a JVM that
// cannot map it (another JDK build, jars changed) loads its classes as
// usual instead of printing a warning on stdout, where the topic Job's
// script reads pulsar-admin's output.
var pulsarAdminArchiveFlags = []string{"-Xshare:auto", "-Xlog:cds=off", "-Xlog:cds+dynamic=off"}

// pulsarAdminArchive returns a class-data archive (JDK 17's dynamic
// AppCDS) of the classes a pulsar-admin command loads, for the JVM at
// paths.java with pulsarAdminJVMFlags and paths.adminLib's jars. The tests
// start pulsar-admin about 120 times (the topic Jobs' scripts, six calls
// each); with the archive a start takes about a third less CPU (1.8 to
// 1.2 CPU-seconds measured). The archive is written once per JVM, jars and
// flags, next to the jars in the tool cache (under cds/, named by a hash of
// all three), by running one command against no broker, and reused after.
// A harness setting only: Pulsar's own image runs pulsar-admin without it.
func pulsarAdminArchive(ctx context.Context, paths pulsarPaths) (string, error) {
	key, err := pulsarAdminArchiveKey(paths)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(filepath.Dir(paths.adminLib), "cds")
	archive := filepath.Join(dir, key+".jsa")
	if fi, err := os.Stat(archive); err == nil && fi.Size() > 0 {
		return archive, nil
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", errors.Wrap(err, "cannot create the class-data archive directory")
	}
	// Tests in several packages may write it at once: each writes its own
	// file and renames it into place.
	tmp, err := os.MkdirTemp(dir, ".dump-")
	if err != nil {
		return "", errors.Wrap(err, "cannot create the class-data archive's temporary directory")
	}
	defer os.RemoveAll(tmp) //nolint:errcheck // Best effort: a leftover temporary directory is harmless.
	conf := filepath.Join(tmp, "client.conf")
	// Port 1 on loopback refuses at once: the command fails after loading
	// what a real call loads (the CLI, the admin client, its HTTP stack).
	if err := os.WriteFile(conf, []byte("webServiceUrl=http://127.0.0.1:1/\nbrokerServiceUrl=pulsar://127.0.0.1:1\n"), 0o600); err != nil {
		return "", errors.Wrap(err, "cannot write the class-data dump's client.conf")
	}
	dump := filepath.Join(tmp, "admin.jsa")
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	args := append([]string{"-XX:ArchiveClassesAtExit=" + dump}, pulsarAdminJVMFlags...)
	args = append(args, "-cp", filepath.Join(paths.adminLib, "*"), pulsarAdminMain, conf, "clusters", "list")
	out, runErr := exec.CommandContext(ctx, paths.java, args...).CombinedOutput()
	if fi, err := os.Stat(dump); err != nil || fi.Size() == 0 {
		return "", errors.Errorf("cannot dump pulsar-admin's class-data archive (%v): %s", runErr, testutil.Tail(string(out), 5))
	}
	if err := os.Rename(dump, archive); err != nil {
		return "", errors.Wrap(err, "cannot move the class-data archive into place")
	}
	return archive, nil
}

// pulsarAdminArchiveKey names an archive by what it depends on: the JVM
// (its resolved path, size and modification time: a JDK update replaces
// it), the jars' directory and the flags.
func pulsarAdminArchiveKey(paths pulsarPaths) (string, error) {
	java, err := filepath.EvalSymlinks(paths.java)
	if err != nil {
		return "", errors.Wrap(err, "cannot resolve java")
	}
	fi, err := os.Stat(java)
	if err != nil {
		return "", errors.Wrap(err, "cannot stat java")
	}
	h := sha256.New()
	_, _ = fmt.Fprintf(h, "%s\n%d\n%d\n%s\n%s\n", java, fi.Size(), fi.ModTime().UnixNano(), paths.adminLib, strings.Join(pulsarAdminJVMFlags, " "))
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}
