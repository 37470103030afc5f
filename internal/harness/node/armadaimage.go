package node

import (
	"bufio"
	"context"
	"debug/elf"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// An ArmadaComponent names one of Armada's images: its directory under
// Armada's build/ (Dockerfile) and the image name the function composes
// (gresearch/armada-<Image>:<version without v>).
type ArmadaComponent struct {
	Build, Image string
}

// ArmadaComponents are Armada's eight component images.
var ArmadaComponents = []ArmadaComponent{
	{Build: "server", Image: "armada-server"},
	{Build: "scheduler", Image: "armada-scheduler"},
	{Build: "scheduleringester", Image: "armada-scheduler-ingester"},
	{Build: "eventingester", Image: "armada-event-ingester"},
	{Build: "lookout", Image: "armada-lookout"},
	{Build: "lookoutingester", Image: "armada-lookout-ingester"},
	{Build: "binoculars", Image: "armada-binoculars"},
	{Build: "executor", Image: "armada-executor"},
}

// ArmadaSources are where an Armada release's files come from: its
// module source (build/*/Dockerfile, config/) and its binaries as
// tools/armada/build.sh builds them.
type ArmadaSources struct {
	Version   string // "v0.22.8"
	ModuleDir string // the module cache's github.com/armadaproject/armada@VERSION
	BinDir    string // the tool cache's armada-VERSION
	// LookoutUI is Lookout's web UI as tools/lookoutui/build.sh builds it
	// (make lookoutui, the default release only): what the Dockerfile's
	// node stage builds and its final stage copies in. "" if it is not
	// built: the lookout image then serves Lookout's API and no UI.
	LookoutUI string
}

// ArmadaImage lays out component's image as its Dockerfile in Armada's
// source at that release does, on a base of the machine's CA certificates
// and passwd/group instead of Alpine: the final stage's RUN addgroup/adduser
// (its uid and gid), USER, each COPY of a binary or of config/, WORKDIR,
// ENTRYPOINT and LABELs. The binaries here are linked against glibc, so the
// image also holds the ELF interpreter and the libraries they need (an
// Alpine image's are static). COPY --from the node stage (Lookout's web
// UI) copies src.LookoutUI, the same build; anything else the Dockerfile
// does is an error, so a new instruction in a new release is noticed, not
// skipped.
func ArmadaImage(src ArmadaSources, c ArmadaComponent) (Image, error) {
	dockerfile := filepath.Join(src.ModuleDir, "build", c.Build, "Dockerfile")
	ins, err := finalStage(dockerfile)
	if err != nil {
		return Image{}, err
	}
	im := Image{Ref: "gresearch/" + c.Image + ":" + strings.TrimPrefix(src.Version, "v"), Config: v1.Config{Labels: map[string]string{}}}
	var files []File
	var binaries []string
	for _, in := range ins {
		switch in.op {
		case "RUN":
			user, uid, gid, err := parseAddUser(in.args)
			if err != nil {
				return Image{}, errors.Wrapf(err, "cannot read %s", dockerfile)
			}
			base, err := Base(user, uid, gid)
			if err != nil {
				return Image{}, err
			}
			files = append(files, base...)
		case "USER":
			im.Config.User = in.args
		case "WORKDIR":
			im.Config.WorkingDir = in.args
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(in.args), &im.Config.Entrypoint); err != nil {
				return Image{}, errors.Wrapf(err, "cannot read the ENTRYPOINT of %s", dockerfile)
			}
		case "LABEL":
			k, v, _ := strings.Cut(in.args, "=")
			im.Config.Labels[k] = strings.Trim(v, `"`)
		case "COPY":
			if strings.HasPrefix(in.args, "--from=") {
				f, err := copyStage(src, in.args)
				if err != nil {
					return Image{}, errors.Wrapf(err, "cannot lay out %s", dockerfile)
				}
				files = append(files, f...)
				continue
			}
			f, bin, err := copyFiles(src, in.args)
			if err != nil {
				return Image{}, errors.Wrapf(err, "cannot lay out %s", dockerfile)
			}
			files = append(files, f...)
			binaries = append(binaries, bin...)
		default:
			return Image{}, errors.Errorf("cannot lay out %s: instruction %s %s is not supported", dockerfile, in.op, in.args)
		}
	}
	libs, err := runtimeLibraries(binaries)
	if err != nil {
		return Image{}, err
	}
	im.Files = withParents(append(files, libs...))
	return im, nil
}

// An instruction is one Dockerfile line, continuation lines joined.
type instruction struct{ op, args string }

// finalStage reads the instructions after the Dockerfile's last FROM.
func finalStage(file string) ([]instruction, error) {
	f, err := os.Open(file) //nolint:gosec // A Dockerfile of Armada's module source.
	if err != nil {
		return nil, errors.Wrap(err, "cannot read Armada's Dockerfile")
	}
	defer func() { _ = f.Close() }()
	var out []instruction
	var cont string
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := cont + strings.TrimSpace(s.Text())
		if c, ok := strings.CutSuffix(line, `\`); ok {
			cont = c + " "
			continue
		}
		cont = ""
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		op, args, _ := strings.Cut(line, " ")
		op = strings.ToUpper(op)
		switch op {
		case "FROM":
			out = out[:0]
		case "ARG":
		default:
			out = append(out, instruction{op: op, args: strings.TrimSpace(args)})
		}
	}
	return out, errors.Wrapf(s.Err(), "cannot read %s", file)
}

// addUser is the one RUN Armada's final stages do (Alpine's busybox).
var addUser = regexp.MustCompile(`^addgroup -S -g (\d+) (\w+) && adduser -S -u (\d+) (\w+) -G (\w+)$`)

// parseAddUser reads the user and its ids from that RUN.
func parseAddUser(run string) (user string, uid, gid int, err error) {
	m := addUser.FindStringSubmatch(run)
	if len(m) != 6 || m[2] != m[5] {
		return "", 0, 0, errors.Errorf("RUN %s is not the addgroup/adduser this layout knows", run)
	}
	gid, _ = strconv.Atoi(m[1])
	uid, _ = strconv.Atoi(m[3])
	return m[4], uid, gid, nil
}

// lookoutUIStage is the one COPY --from Armada's Dockerfiles have: the
// node stage's build of Lookout's UI.
const lookoutUIStage = "--from=NODE /lookoutui/build/"

// copyStage reads one COPY --from=STAGE SRC DST: Lookout's UI, from
// src.LookoutUI (none if it is not built).
func copyStage(src ArmadaSources, args string) ([]File, error) {
	to, ok := strings.CutPrefix(args, lookoutUIStage+" ")
	if to = strings.TrimSpace(to); !ok || to == "" || strings.Contains(to, " ") {
		return nil, errors.Errorf("COPY %s: only COPY %s DST is supported", args, lookoutUIStage)
	}
	if src.LookoutUI == "" {
		return nil, nil
	}
	return copyTree(src.LookoutUI, to)
}

// copyFiles reads one COPY SRC DST: SRC is a binary (goreleaser's build
// context holds them at its root) or a file or directory under config/.
// It returns the files and the binaries' paths.
func copyFiles(src ArmadaSources, args string) ([]File, []string, error) {
	f := strings.Fields(args)
	if len(f) != 2 {
		return nil, nil, errors.Errorf("COPY %s: want one source and one destination", args)
	}
	from, to := f[0], f[1]
	if !strings.Contains(from, "/") {
		p := filepath.Join(src.BinDir, from)
		data, err := os.ReadFile(p) //nolint:gosec // A binary of the tool cache.
		if err != nil {
			return nil, nil, errors.Wrapf(err, "cannot read Armada's binary %s (make armada-bins)", from)
		}
		if strings.HasSuffix(to, "/") {
			to += from
		}
		return []File{{Path: to, Mode: 0o755, Data: data}}, []string{p}, nil
	}
	root := filepath.Join(src.ModuleDir, filepath.FromSlash(strings.TrimSuffix(from, "/")))
	fi, err := os.Stat(root)
	if err != nil {
		return nil, nil, errors.Wrapf(err, "cannot read %s", from)
	}
	if !fi.IsDir() {
		data, err := os.ReadFile(root) //nolint:gosec // A file of Armada's module source.
		return []File{{Path: to, Mode: 0o644, Data: data}}, nil, errors.Wrapf(err, "cannot read %s", from)
	}
	out, err := copyTree(root, to)
	return out, nil, errors.Wrapf(err, "cannot read %s", from)
}

// copyTree reads the files under root as files under to.
func copyTree(root, to string) ([]File, error) {
	var out []File
	err := filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		data, err := os.ReadFile(p) //nolint:gosec // A file of Armada's module source or of its UI's build.
		out = append(out, File{Path: path.Join(to, filepath.ToSlash(rel)), Mode: 0o644, Data: data})
		return err
	})
	return out, errors.Wrapf(err, "cannot read %s", root)
}

// libDirs are where the machine's glibc keeps its libraries, in its
// loader's search order.
var libDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64"}

// runtimeLibraries are the ELF interpreter and the shared libraries the
// binaries need, and those the libraries need in turn, each at the path
// the loader looks in; none for static binaries. A library needing the
// interpreter (libc.so.6 names ld-linux-x86-64.so.2) gets the one loaded
// already.
func runtimeLibraries(binaries []string) ([]File, error) {
	loaded := map[string]bool{}
	seen := map[string]bool{}
	var out []File
	queue := slices.Clone(binaries)
	add := func(at, from string) error {
		if seen[at] {
			return nil
		}
		seen[at] = true
		queue = append(queue, from)
		data, err := os.ReadFile(from) //nolint:gosec // A library of the machine's glibc.
		out = append(out, File{Path: at, Mode: 0o755, Data: data})
		return errors.Wrapf(err, "cannot read %s", from)
	}
	for len(queue) > 0 {
		b := queue[0]
		queue = queue[1:]
		libs, interp, err := elfNeeds(b)
		if err != nil {
			return nil, err
		}
		if interp != "" {
			if err := add(interp, interp); err != nil {
				return nil, err
			}
			loaded[path.Base(interp)] = true
		}
		for _, lib := range libs {
			if loaded[lib] {
				continue
			}
			i := slices.IndexFunc(libDirs, func(d string) bool { _, err := os.Stat(filepath.Join(d, lib)); return err == nil })
			if i < 0 {
				return nil, errors.Errorf("cannot find %s, which %s needs, in %v", lib, b, libDirs)
			}
			if err := add(path.Join(libDirs[0], lib), filepath.Join(libDirs[i], lib)); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// elfNeeds reads the shared libraries an ELF file names (DT_NEEDED) and
// its interpreter, if it has one.
func elfNeeds(file string) (libs []string, interp string, err error) {
	f, err := elf.Open(file)
	if err != nil {
		return nil, "", errors.Wrapf(err, "cannot read %s as ELF", file)
	}
	defer func() { _ = f.Close() }()
	libs, err = f.ImportedLibraries()
	if err != nil {
		return nil, "", errors.Wrapf(err, "cannot read the libraries %s needs", file)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			buf := make([]byte, p.Filesz)
			if _, err := p.ReadAt(buf, 0); err == nil {
				interp = strings.TrimRight(string(buf), "\x00")
			}
		}
	}
	return libs, interp, nil
}

// withParents adds a 0755 directory for every parent of a file that has
// none, so the layer's tar is complete.
func withParents(files []File) []File {
	have := map[string]bool{}
	for _, f := range files {
		have[path.Clean(f.Path)] = true
	}
	out := files
	for _, f := range files {
		for d := path.Dir(path.Clean(f.Path)); d != "/" && d != "."; d = path.Dir(d) {
			if !have[d] {
				have[d] = true
				out = append(out, File{Path: d, Dir: true, Mode: 0o755})
			}
		}
	}
	return out
}

// ArmadaSourcesFor finds an Armada release's module source (downloading
// it if needed) and its binaries in the tool cache ($ARMADA_BIN_ROOT if
// set). version may lack the leading v ("0.22.8").
func ArmadaSourcesFor(ctx context.Context, version string) (ArmadaSources, error) {
	version = "v" + strings.TrimPrefix(version, "v")
	dir, err := testutil.ModuleDir(ctx, "github.com/armadaproject/armada", version)
	if err != nil {
		return ArmadaSources{}, err
	}
	root, err := testutil.ToolDir("ARMADA_BIN_ROOT")
	if err != nil {
		return ArmadaSources{}, err
	}
	return ArmadaSources{Version: version, ModuleDir: dir, BinDir: filepath.Join(root, "armada-"+version), LookoutUI: testutil.LookoutUIDir(root, version)}, nil
}
