package node

import (
	"os"
	"os/exec"
	"path"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/armada"
)

// Where Pulsar's image keeps things, as Apache's Dockerfile
// (docker/pulsar/Dockerfile) lays them out.
const (
	pulsarHome = "/pulsar"
	// pulsarUID is the image's user, in group root (gid 0).
	pulsarUID = 10000
)

// pulsarTools are the programs the topic Job's script runs, at the paths
// Debian's packages put them (bash and sed in /bin; curl and coreutils'
// tr in /usr/bin); Apache's image has them from Alpine's packages.
var pulsarTools = []string{"/bin/bash", "/bin/sed", "/usr/bin/curl", "/usr/bin/tr"}

// PulsarImageOptions say where PulsarImage's files come from; each
// zero field has a default.
type PulsarImageOptions struct {
	// Ref names the image; default apachepulsar/pulsar:<PulsarVersion>,
	// as the composed topic Job names it.
	Ref string
	// Tools are the programs the image holds, by their path in the image,
	// copied from this machine's; default pulsarTools.
	Tools []string
}

// PulsarImage lays out a stand-in for Apache Pulsar's image, enough for
// the composed topic Job (bash running curl, tr and sed against the
// broker's admin API) as Apache's Dockerfile lays it out: WORKDIR and
// PULSAR_HOME /pulsar with conf/, data/ and logs/ that group root may
// write, user 10000 in group root, and the image's environment. It holds
// no broker and no Java runtime, which the Job does not run; the tools
// are this machine's, with the libraries they need.
func PulsarImage(o PulsarImageOptions) (Image, error) {
	if o.Ref == "" {
		o.Ref = "apachepulsar/pulsar:" + armada.PulsarVersion
	}
	if o.Tools == nil {
		o.Tools = pulsarTools
	}
	files, err := Base("pulsar", pulsarUID, 0)
	if err != nil {
		return Image{}, err
	}
	binaries := make([]string, 0, len(o.Tools))
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
	libs, err := runtimeLibraries(binaries)
	if err != nil {
		return Image{}, err
	}
	files = append(files, libs...)
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
			// Apache's image also sets JAVA_HOME=/opt/jvm and puts
			// /opt/jvm/bin and /pulsar/bin (pulsar-admin's) on PATH: the
			// stand-in holds neither Java nor Pulsar's scripts, and the
			// topic Job's script needs only the tools above.
			Env: []string{
				"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
				"PULSAR_HOME=" + pulsarHome,
				"LANG=C.UTF-8",
			},
		},
	}, nil
}
