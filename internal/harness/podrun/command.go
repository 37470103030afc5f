package podrun

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// A podCmd is how one container runs: its invocation, binary, args and
// working directory, and the environment the runner adds.
type podCmd struct {
	inv      *Invocation
	bin, dir string
	args     []string
	env      []EnvVar
}

// armadaCommand runs an Armada container as its release's binary, with
// its listening ports moved to the workload's own loopback ports.
func (r *Runner) armadaCommand(p *pod, c corev1.Container, root string) (*podCmd, error) {
	_, tag, _ := ComponentForImage(c.Image)
	rel, ok := r.o.Releases(tag)
	if !ok {
		return nil, errors.Errorf("%s container %s runs Armada %s, whose binaries are not built: run `make armada-bins`", p.w.ID(), c.Name, tag)
	}
	rs := &Resolver{Sources: clusterSources{c: r.o.Client, ns: r.o.Namespace}, Namespace: r.o.Namespace}
	inv, err := rs.Invocation(p.w, c, root)
	if err != nil {
		return nil, errors.Wrapf(err, "%s container %s", p.w.ID(), c.Name)
	}
	cfg, err := LoadConfig(rel.SourceDir, inv.Component, inv.ConfigFiles)
	if err != nil {
		return nil, errors.Wrapf(err, "%s container %s", p.w.ID(), c.Name)
	}
	moved, portEnv, err := r.movePorts(p.w.ID(), cfg)
	if err != nil {
		return nil, err
	}
	local := map[int32]int{}
	for k, port := range moved {
		v, _ := cfg.Get(k)
		if n, err := strconv.Atoi(fmt.Sprint(v)); err == nil {
			local[int32(n)] = port //nolint:gosec // Ports fit.
		}
	}
	r.mu.Lock()
	p.local = local
	r.mu.Unlock()
	dir := rel.SourceDir
	if inv.Component == "lookout" && rel.LookoutUI != "" {
		if dir, err = lookoutDir(root, rel); err != nil {
			return nil, errors.Wrapf(err, "%s container %s", p.w.ID(), c.Name)
		}
	}
	return &podCmd{inv: inv, bin: filepath.Join(rel.BinDir, inv.Component), dir: dir, args: inv.Args, env: portEnv}, nil
}

// lookoutDir lays out Lookout's working directory under root as the
// armada-lookout image's /app (Armada's build/lookout/Dockerfile): its
// config/ (the release's source's) and the built UI at
// internal/lookoutui/build, which Lookout serves at / relative to its
// working directory (internal/lookout/gen/restapi/configure_lookout.go).
// The links name the files as the process's own root shows them
// (PodPath).
func lookoutDir(root string, rel Release) (string, error) {
	dir := filepath.Join(root, "app")
	if err := os.MkdirAll(filepath.Join(dir, "internal", "lookoutui"), 0o700); err != nil {
		return "", errors.Wrap(err, "cannot create Lookout's working directory")
	}
	for link, target := range map[string]string{
		filepath.Join(dir, "config"):                         filepath.Join(rel.SourceDir, "config"),
		filepath.Join(dir, "internal", "lookoutui", "build"): rel.LookoutUI,
	} {
		if err := os.Symlink(PodPath(target), link); err != nil && !os.IsExist(err) {
			return "", errors.Wrap(err, "cannot link Lookout's working directory")
		}
	}
	return dir, nil
}

// pulsarCommand runs a container of Pulsar's image (the topic-init Job's
// script, which calls the broker's admin API with curl) in a directory of
// its own, as the image's /pulsar.
func (r *Runner) pulsarCommand(p *pod, c corev1.Container, root string) (*podCmd, error) {
	rs := &Resolver{Sources: clusterSources{c: r.o.Client, ns: r.o.Namespace}, Namespace: r.o.Namespace}
	inv, err := rs.Script(p.w, c, root)
	if err != nil {
		return nil, errors.Wrapf(err, "%s container %s", p.w.ID(), c.Name)
	}
	dir := filepath.Join(root, "pulsar")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, errors.Wrap(err, "cannot create Pulsar's directory")
	}
	return &podCmd{inv: inv, bin: inv.Args[0], dir: dir, args: inv.Args[1:]}, nil
}

// movePorts gives each listening port key of a workload's config a
// loopback port of its own, the same one across restarts, so the Service
// relays keep pointing at it.
func (r *Runner) movePorts(id string, cfg *Config) (map[string]int, []EnvVar, error) {
	var ferr error
	moved, env := PortOverrides(cfg, func(key string) int {
		p, err := r.stablePort(id + "/" + key)
		if err != nil {
			ferr = err
		}
		return p
	})
	return moved, env, ferr
}

// stablePort is the loopback port of key: a free one the first time, the
// same one after.
func (r *Runner) stablePort(key string) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.ports[key]; ok {
		return p, nil
	}
	p, err := r.o.FreePort()
	if err != nil {
		return 0, errors.Wrap(err, "cannot find a free port")
	}
	r.ports[key] = p
	return p, nil
}

// toolCommand runs a tool's container (ghostunnel, a TLS sidecar) as its
// binary with the container's args, its ports moved as the pod's Armada
// container's are: it listens on loopback ports of its own and forwards
// to where the Armada container's ports moved, which starts first.
func (r *Runner) toolCommand(p *pod, c corev1.Container, root string) (*podCmd, error) {
	tool, _ := ToolForImage(c.Image)
	bin, ok := r.o.Tools[tool]
	if !ok {
		return nil, errors.Errorf("%s container %s runs %s, whose binary the runner was not given: build it with `make %s`", p.w.ID(), c.Name, c.Image, tool)
	}
	rs := &Resolver{Sources: clusterSources{c: r.o.Client, ns: r.o.Namespace}, Namespace: r.o.Namespace}
	inv, err := rs.Container(p.w, c, root)
	if err != nil {
		return nil, errors.Wrapf(err, "%s container %s", p.w.ID(), c.Name)
	}
	listen := func(port int32) (int, error) {
		return r.stablePort(p.w.ID() + "/" + c.Name + "/" + strconv.Itoa(int(port)))
	}
	target := func(port int32) (int, bool) {
		r.mu.Lock()
		defer r.mu.Unlock()
		n, ok := p.local[port]
		return n, ok
	}
	args, listened, err := MoveGhostunnelPorts(inv.Command(c), listen, target)
	if err != nil {
		return nil, errors.Wrapf(err, "%s container %s", p.w.ID(), c.Name)
	}
	r.mu.Lock()
	maps.Copy(p.local, listened)
	r.mu.Unlock()
	return &podCmd{inv: inv, bin: bin, dir: "/", args: args}, nil
}

// clusterSources are a namespace's Secrets and ConfigMaps.
type clusterSources struct {
	c  client.Client
	ns string
}

func (s clusterSources) Secret(name string) (map[string][]byte, bool, error) {
	sec := &corev1.Secret{}
	err := s.c.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: name}, sec)
	if kerrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, errors.Wrapf(err, "cannot get Secret %s", name)
	}
	return sec.Data, true, nil
}

func (s clusterSources) ConfigMap(name string) (map[string][]byte, bool, error) {
	cm := &corev1.ConfigMap{}
	err := s.c.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: name}, cm)
	if kerrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, errors.Wrapf(err, "cannot get ConfigMap %s", name)
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	maps.Copy(data, cm.BinaryData)
	return data, true, nil
}
