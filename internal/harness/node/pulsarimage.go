package node

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// Where Pulsar's image keeps things, as Apache's Dockerfile
// (docker/pulsar/Dockerfile) lays them out.
const (
	pulsarHome = "/pulsar"
	pulsarJava = "/opt/jvm"
	// pulsarUID is the image's user, in group root (gid 0).
	pulsarUID = 10000
)

// pulsarTools are the programs the topic Job's script runs besides
// pulsar-admin, at the paths Debian's packages put them (bash, sed and
// grep in /bin; coreutils' head and tr in /usr/bin).
var pulsarTools = []string{"/bin/bash", "/bin/grep", "/bin/sed", "/usr/bin/head", "/usr/bin/tr"}

// pulsarJavaModules are the Java modules pulsar-admin's jars need, as
// jdeps reads them (jdeps --print-module-deps, each jar alone), less those
// only optional code paths use (JDBC, scripting, the compiler, RMI,
// agents), plus what a client connecting with TLS and resolving names
// needs (elliptic-curve ciphers, JNDI's DNS provider). java.desktop is for
// java.beans, which log4j's LoggerContext loads at its start.
var pulsarJavaModules = []string{
	"java.base", "java.desktop", "java.logging", "java.management",
	"java.naming", "java.security.jgss", "java.xml", "jdk.crypto.ec",
	"jdk.naming.dns", "jdk.unsupported",
}

// jlinkFlags make the runtime small: no debug attributes, headers or
// manual pages, compressed classes, and none of AWT's native libraries
// (java.beans needs none; they need X11's).
var jlinkFlags = []string{
	"--strip-debug", "--no-header-files", "--no-man-pages", "--compress=2",
	"--exclude-files=glob:/java.desktop/lib/**",
}

// jlinkTimeout bounds building the runtime: about 6 s on an idle machine.
const jlinkTimeout = 5 * time.Minute

// pulsarAdminJava are the JVM flags pulsar-admin runs with: a small heap
// for the Job's 256 MiB, a quick start (C1 only, one GC thread), and the
// reflective access Netty wants.
const pulsarAdminJava = `-Xmx128m -XX:MaxDirectMemorySize=64m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
  -Djava.net.preferIPv4Stack=true -Dio.netty.tryReflectionSetAccessible=true \
  --add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/jdk.internal.misc=ALL-UNNAMED`

// pulsarAdminScript is the image's bin/pulsar-admin: Pulsar's admin CLI
// with conf/client.conf ($PULSAR_CLIENT_CONF if set), as Apache's
// bin/pulsar-admin runs it, using only bash. Its logs go to stderr, so
// stdout holds only the command's output, which the Job's script reads.
const pulsarAdminScript = `#!/bin/bash
# pulsar-admin (pulsar-client-tools %s): org.apache.pulsar.admin.cli.PulsarAdminTool.
PULSAR_HOME=${PULSAR_HOME:-%s}
exec "${JAVA_HOME:-%s}/bin/java" %s \
  "-Dlog4j.configurationFile=$PULSAR_HOME/conf/log4j2-admin.properties" \
  -cp "$PULSAR_HOME/lib/*" org.apache.pulsar.admin.cli.PulsarAdminTool \
  "${PULSAR_CLIENT_CONF:-$PULSAR_HOME/conf/client.conf}" "$@"
`

// pulsarClientConf is conf/client.conf: Pulsar's defaults, a broker on
// localhost; --admin-url overrides webServiceUrl.
const pulsarClientConf = `webServiceUrl=http://localhost:8080/
brokerServiceUrl=pulsar://localhost:6650/
`

// PulsarImageOptions say where PulsarImage's files come from; each
// zero field has a default.
type PulsarImageOptions struct {
	// Ref names the image; default apachepulsar/pulsar:<PulsarVersion>,
	// as the composed topic Job names it.
	Ref string
	// AdminLib holds pulsar-admin's jars; default the tool cache's
	// pulsar-admin-<PulsarAdminToolVersion>/lib ($PULSAR_BIN_ROOT if set),
	// which `make pulsar` assembles.
	AdminLib string
	// JDK is the JDK (17 or later, with jmods/) jlink makes the Java
	// runtime from; default $JAVA_HOME if it has jmods, else the JDK of
	// java on PATH.
	JDK string
	// RuntimeCache is where the runtime is built once and kept; default
	// the tool cache ($JAVA_RUNTIME_ROOT if set).
	RuntimeCache string
	// Tools are the programs the image holds besides Java's, by their
	// path in the image, copied from this machine's; default bash, grep,
	// sed, head and tr.
	Tools []string
	// Progress receives a line when the runtime is built; default stderr.
	Progress io.Writer
}

// PulsarImage lays out a stand-in for Apache Pulsar's image, enough for
// the composed topic Job (bash running pulsar-admin, head, tr, sed and
// grep) as Apache's Dockerfile lays it out: WORKDIR and PULSAR_HOME
// /pulsar with bin/pulsar-admin, conf/ and lib/ (pulsar-admin's jars, not
// the broker's), a Java runtime at /opt/jvm (JAVA_HOME), user 10000 in
// group root. The runtime is a jlink image of the modules pulsar-admin
// needs from this machine's JDK, built once into the tool cache; bash and
// the other tools are this machine's, with the libraries they need.
func PulsarImage(ctx context.Context, o PulsarImageOptions) (Image, error) {
	o, err := o.withDefaults()
	if err != nil {
		return Image{}, err
	}
	runtime, err := javaRuntime(ctx, o.JDK, o.RuntimeCache, o.Progress)
	if err != nil {
		return Image{}, err
	}
	files, err := Base("pulsar", pulsarUID, 0)
	if err != nil {
		return Image{}, err
	}
	java, elfs, err := treeFiles(runtime, pulsarJava)
	if err != nil {
		return Image{}, errors.Wrap(err, "cannot read the Java runtime")
	}
	files = append(files, java...)
	bundled := map[string]bool{}
	for _, e := range elfs {
		bundled[filepath.Base(e)] = true
	}
	binaries := slices.Clone(elfs)
	for _, t := range o.Tools {
		src, err := exec.LookPath(path.Base(t))
		if err != nil {
			return Image{}, errors.Wrapf(err, "cannot find %s on this machine", path.Base(t))
		}
		data, err := os.ReadFile(src) //nolint:gosec // A program of this machine's.
		if err != nil {
			return Image{}, errors.Wrapf(err, "cannot read %s", src)
		}
		files = append(files, File{Path: t, Mode: 0o755, Data: data})
		binaries = append(binaries, src)
	}
	libs, err := sharedLibraries(binaries, bundled)
	if err != nil {
		return Image{}, err
	}
	files = append(files, libs...)
	jars, err := adminJars(o.AdminLib)
	if err != nil {
		return Image{}, err
	}
	files = append(files, jars...)
	script := fmt.Sprintf(pulsarAdminScript, armada.PulsarAdminToolVersion, pulsarHome, pulsarJava, pulsarAdminJava)
	files = append(files,
		File{Path: pulsarHome + "/bin/pulsar-admin", Mode: 0o755, Data: []byte(script)},
		File{Path: pulsarHome + "/conf/client.conf", Mode: 0o664, Data: []byte(pulsarClientConf)},
		File{Path: pulsarHome + "/conf/log4j2-admin.properties", Mode: 0o664, Data: []byte(testenv.PulsarAdminLog4j)})
	// Apache's image lets group root write these, for a user of any uid.
	for _, d := range []string{"conf", "data", "logs"} {
		files = append(files, File{Path: pulsarHome + "/" + d, Dir: true, Mode: 0o775})
	}
	return Image{
		Ref:   o.Ref,
		Files: withParents(files),
		Config: v1.Config{
			User:       "10000",
			WorkingDir: pulsarHome,
			Env: []string{
				"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:" + pulsarJava + "/bin:" + pulsarHome + "/bin",
				"JAVA_HOME=" + pulsarJava,
				"PULSAR_HOME=" + pulsarHome,
				"LANG=C.UTF-8",
			},
		},
	}, nil
}

// withDefaults fills o's zero fields.
func (o PulsarImageOptions) withDefaults() (PulsarImageOptions, error) {
	if o.Ref == "" {
		o.Ref = "apachepulsar/pulsar:" + armada.PulsarVersion
	}
	if o.AdminLib == "" {
		root, err := testutil.ToolDir("PULSAR_BIN_ROOT")
		if err != nil {
			return o, err
		}
		o.AdminLib = filepath.Join(root, "pulsar-admin-"+armada.PulsarAdminToolVersion, "lib")
	}
	if o.JDK == "" {
		jdk, err := findJDK()
		if err != nil {
			return o, err
		}
		o.JDK = jdk
	}
	if o.RuntimeCache == "" {
		root, err := testutil.ToolDir("JAVA_RUNTIME_ROOT")
		if err != nil {
			return o, err
		}
		o.RuntimeCache = root
	}
	if o.Tools == nil {
		o.Tools = pulsarTools
	}
	if o.Progress == nil {
		o.Progress = os.Stderr
	}
	return o, nil
}

// findJDK is $JAVA_HOME if it has jmods, else the JDK holding java on
// PATH (Debian's /usr/bin/java links into /usr/lib/jvm).
func findJDK() (string, error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		if _, err := os.Stat(filepath.Join(home, "jmods")); err == nil { //nolint:gosec // JAVA_HOME names the JDK to use.
			return home, nil
		}
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return "", errors.Wrap(err, "cannot find java for the Pulsar image's runtime: install a JDK 17 with its jmods "+
			"(apt-get install -y openjdk-17-jdk-headless openjdk-17-jmods) or set JAVA_HOME")
	}
	java, err = filepath.EvalSymlinks(java)
	if err != nil {
		return "", errors.Wrap(err, "cannot resolve java")
	}
	home := filepath.Dir(filepath.Dir(java))
	if _, err := os.Stat(filepath.Join(home, "jmods")); err != nil {
		return "", errors.Errorf("the JDK at %s has no jmods, which jlink needs (apt-get install -y openjdk-17-jmods), or set JAVA_HOME to one that has", home)
	}
	return home, nil
}

// javaRuntime returns a jlink image of pulsarJavaModules from jdk: built
// once under cache, in a directory named by the JDK's version and the
// modules and flags, and reused after.
func javaRuntime(ctx context.Context, jdk, cache string, progress io.Writer) (string, error) {
	version, err := jdkVersion(jdk)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	_, _ = fmt.Fprintf(h, "%s\n%s\n%s\n", version, strings.Join(pulsarJavaModules, ","), strings.Join(jlinkFlags, " "))
	dir := filepath.Join(cache, "java-runtime-"+version+"-"+hex.EncodeToString(h.Sum(nil))[:12])
	if _, err := os.Stat(filepath.Join(dir, "bin", "java")); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(cache, 0o750); err != nil {
		return "", errors.Wrap(err, "cannot create the Java runtime's cache")
	}
	// Tests in several packages may build it at once: each builds its
	// own and renames it into place; the first rename wins.
	tmp, err := os.MkdirTemp(cache, ".java-runtime-")
	if err != nil {
		return "", errors.Wrap(err, "cannot create the Java runtime's temporary directory")
	}
	defer os.RemoveAll(tmp) //nolint:errcheck // Best effort: a leftover temporary directory is harmless.
	_, _ = fmt.Fprintf(progress, "Building the Pulsar image's Java runtime (jlink, Java %s: %s) into %s\n", version, strings.Join(pulsarJavaModules, ","), dir)
	began := time.Now()
	out := filepath.Join(tmp, "jvm")
	args := append([]string{"--add-modules", strings.Join(pulsarJavaModules, ",")}, jlinkFlags...)
	args = append(args, "--output", out)
	ctx, cancel := context.WithTimeout(ctx, jlinkTimeout)
	defer cancel()
	if b, err := exec.CommandContext(ctx, filepath.Join(jdk, "bin", "jlink"), args...).CombinedOutput(); err != nil { //nolint:gosec // The JDK's jlink.
		return "", errors.Wrapf(err, "cannot build the Java runtime with jlink: %s", b)
	}
	// As Apache's image does: names resolve afresh, as Services move.
	ttl := "networkaddress.cache.ttl=1\nnetworkaddress.cache.negative.ttl=1\n"
	if err := appendFile(filepath.Join(out, "conf", "security", "java.security"), ttl); err != nil {
		return "", err
	}
	if err := os.Rename(out, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "bin", "java")); serr != nil {
			return "", errors.Wrap(err, "cannot move the Java runtime into place")
		}
	}
	_, _ = fmt.Fprintf(progress, "Built the Java runtime in %s\n", time.Since(began).Round(100*time.Millisecond))
	return dir, nil
}

// jdkVersion is the JDK's JAVA_RUNTIME_VERSION from its release file
// (17.0.15+6-Debian-1deb12u1), or its JAVA_VERSION.
func jdkVersion(jdk string) (string, error) {
	f, err := os.Open(filepath.Join(jdk, "release")) //nolint:gosec // The JDK's release file.
	if err != nil {
		return "", errors.Wrap(err, "cannot read the JDK's release file")
	}
	defer func() { _ = f.Close() }()
	vars := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), "="); ok {
			vars[k] = strings.Trim(v, `"`)
		}
	}
	if err := s.Err(); err != nil {
		return "", errors.Wrap(err, "cannot read the JDK's release file")
	}
	for _, k := range []string{"JAVA_RUNTIME_VERSION", "JAVA_VERSION"} {
		if v := vars[k]; v != "" && !strings.ContainsAny(v, "/ ") {
			return v, nil
		}
	}
	return "", errors.Errorf("the JDK's release file at %s names no version", jdk)
}

// appendFile appends s to the file.
func appendFile(file, s string) error {
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0) //nolint:gosec // A file of the runtime jlink wrote.
	if err != nil {
		return errors.Wrapf(err, "cannot open %s", file)
	}
	if _, err := f.WriteString(s); err != nil {
		_ = f.Close()
		return errors.Wrapf(err, "cannot write %s", file)
	}
	return errors.Wrapf(f.Close(), "cannot write %s", file)
}

// treeFiles reads the tree at root as files under at, a symbolic link as
// the file it names (an image layer holds no links; a link to a directory
// is an error), and returns them with the paths of its ELF files (the
// executables and shared objects). Every user may read each file and
// directory, and run the executables, whatever umask wrote them.
func treeFiles(root, at string) ([]File, []string, error) {
	var files []File
	var elfs []string
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		to := path.Join(at, filepath.ToSlash(rel))
		fi, err := os.Stat(p)
		if err != nil {
			return errors.Wrapf(err, "cannot read %s", p)
		}
		switch {
		case e.IsDir():
			files = append(files, File{Path: to, Dir: true, Mode: 0o755})
			return nil
		case !fi.Mode().IsRegular():
			return errors.Errorf("%s is neither a file nor a directory, nor links to a file", p)
		}
		data, err := os.ReadFile(p) //nolint:gosec // A file of the Java runtime.
		if err != nil {
			return errors.Wrapf(err, "cannot read %s", p)
		}
		mode := int64(0o644)
		if fi.Mode()&0o111 != 0 {
			mode = 0o755
		}
		files = append(files, File{Path: to, Mode: mode, Data: data})
		if len(data) > 4 && string(data[:4]) == "\x7fELF" {
			elfs = append(elfs, p)
		}
		return nil
	})
	return files, elfs, err
}

// adminJars are pulsar-admin's jars under /pulsar/lib.
func adminJars(dir string) ([]File, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot read pulsar-admin's jars at %s (make pulsar)", dir)
	}
	var out []File
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".jar") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name())) //nolint:gosec // A jar of the tool cache.
		if err != nil {
			return nil, errors.Wrapf(err, "cannot read %s", e.Name())
		}
		out = append(out, File{Path: pulsarHome + "/lib/" + e.Name(), Mode: 0o644, Data: data})
	}
	if len(out) == 0 {
		return nil, errors.Errorf("no jars in %s (make pulsar)", dir)
	}
	return out, nil
}
