package podrun

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// An Invocation is how one composed container runs outside Kubernetes: its
// binary's arguments and environment exactly as the pod would have them,
// and its volumes written to local directories, which the process sees at
// their mount paths (PodCommand).
type Invocation struct {
	// Workload and Container identify where it came from.
	Workload, Container string
	// Component is the Armada binary, e.g. "server".
	Component string
	// Tag is the image tag.
	Tag string
	// Args are the binary's arguments.
	Args []string
	// Env is the container's environment, in the pod's order.
	Env []EnvVar
	// Mounts maps each mount path to the local path standing in for it.
	Mounts map[string]string
	// ConfigFiles are the local paths of the --config files, for the test
	// to read.
	ConfigFiles []string
	// MetricsPort is the container port named "metrics", which the
	// component's Service and ServiceMonitor scrape; 0 if none.
	MetricsPort int32
	// Ports are the container's named ports.
	Ports map[string]int32
	// Readiness is the container's readinessProbe; nil if none.
	Readiness *corev1.Probe
}

// EnvVar is one environment variable.
type EnvVar struct{ Name, Value string }

// Lookup returns the value of an environment variable.
func (inv *Invocation) Lookup(name string) (string, bool) {
	for _, e := range slices.Backward(inv.Env) {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

// Sources give the data of the Secrets and ConfigMaps pods mount or read
// env from: a render's, a cluster's.
type Sources interface {
	// Secret returns a Secret's data, decoded, and whether it exists.
	Secret(name string) (map[string][]byte, bool, error)
	// ConfigMap returns a ConfigMap's data and binaryData, and whether it
	// exists.
	ConfigMap(name string) (map[string][]byte, bool, error)
}

// A Resolver turns composed containers into Invocations.
type Resolver struct {
	// Sources hold the Secrets and ConfigMaps of the workloads' namespace.
	Sources Sources
	// Namespace stands in for metadata.namespace of workloads that have
	// none.
	Namespace string
}

// fakeUID stands in for metadata.uid.
const fakeUID = "00000000-0000-4000-8000-000000000000"

// Invocation reconstructs a container of w running an Armada image. Files
// of the volumes it mounts are written under root.
func (rs *Resolver) Invocation(w Workload, c corev1.Container, root string) (*Invocation, error) {
	comp, tag, ok := ComponentForImage(c.Image)
	if !ok {
		return nil, errors.Errorf("image %q is not an Armada image", c.Image)
	}
	inv, err := rs.Container(w, c, root)
	if err != nil {
		return nil, err
	}
	inv.Component, inv.Tag = comp, tag
	args := c.Args
	if len(c.Command) > 0 {
		// The entrypoint is the image's binary; a command must name an
		// Armada binary (the lookout image also holds lookoutingester).
		b := path.Base(c.Command[0])
		if !slices.Contains(Binaries, b) {
			return nil, errors.Errorf("command %q runs no Armada binary", c.Command[0])
		}
		inv.Component = b
		args = append(slices.Clone(c.Command[1:]), c.Args...)
	}
	vars := map[string]string{}
	for _, e := range inv.Env {
		vars[e.Name] = e.Value
	}
	for _, a := range args {
		inv.Args = append(inv.Args, Expand(a, vars))
	}
	rw := NewRewriter(inv.Mounts)
	for _, f := range ConfigFlags(inv.Args) {
		inv.ConfigFiles = append(inv.ConfigFiles, rw.Rewrite(f))
	}
	return inv, nil
}

// Container reconstructs any container of w: its volumes written under
// root and its environment resolved, but neither its component nor its
// args, which depend on the image (Invocation does that for Armada's;
// Command expands a container's command and args as the kubelet does).
func (rs *Resolver) Container(w Workload, c corev1.Container, root string) (*Invocation, error) {
	inv := &Invocation{Workload: w.ID(), Container: c.Name, Mounts: map[string]string{}, Ports: map[string]int32{}, Readiness: c.ReadinessProbe}
	for _, p := range c.Ports {
		if p.Name == "metrics" {
			inv.MetricsPort = p.ContainerPort
		}
		if p.Name != "" {
			inv.Ports[p.Name] = p.ContainerPort
		}
	}

	if err := rs.mount(inv, w, c, root); err != nil {
		return nil, err
	}
	env, err := rs.env(w, c)
	if err != nil {
		return nil, err
	}
	inv.Env = env
	return inv, nil
}

// Command returns c's command and args with $(VAR) references to inv's
// environment expanded, as the kubelet runs them.
func (inv *Invocation) Command(c corev1.Container) []string {
	vars := map[string]string{}
	for _, e := range inv.Env {
		vars[e.Name] = e.Value
	}
	out := make([]string, 0, len(c.Command)+len(c.Args))
	for _, a := range append(slices.Clone(c.Command), c.Args...) {
		out = append(out, Expand(a, vars))
	}
	return out
}

// Script reconstructs a container of w that runs a script of the
// render's in a third-party image (the Pulsar topic-init Job): Container,
// with Args its command and args expanded as the kubelet runs them.
// Component is the container's name.
func (rs *Resolver) Script(w Workload, c corev1.Container, root string) (*Invocation, error) {
	inv, err := rs.Container(w, c, root)
	if err != nil {
		return nil, err
	}
	inv.Component = c.Name
	inv.Args = inv.Command(c)
	if len(inv.Args) == 0 {
		return nil, errors.Errorf("container %s has no command: only the render's own scripts are run from a third-party image", c.Name)
	}
	return inv, nil
}

// mount materialises every volume c mounts under root and records where
// each mount path points.
func (rs *Resolver) mount(inv *Invocation, w Workload, c corev1.Container, root string) error {
	vols := map[string]corev1.Volume{}
	for _, v := range w.Pod.Volumes {
		vols[v.Name] = v
	}
	written := map[string]string{}
	for _, m := range c.VolumeMounts {
		v, ok := vols[m.Name]
		if !ok {
			return errors.Errorf("volumeMount %s names no volume", m.Name)
		}
		dir, ok := written[m.Name]
		if !ok {
			dir = filepath.Join(root, "volumes", m.Name)
			if err := rs.volume(v, w, c, dir); err != nil {
				return errors.Wrapf(err, "volume %s", m.Name)
			}
			written[m.Name] = dir
		}
		inv.Mounts[path.Clean(m.MountPath)] = filepath.Join(dir, filepath.FromSlash(m.SubPath))
	}
	return nil
}

// volume writes a volume's files into dir.
func (rs *Resolver) volume(v corev1.Volume, w Workload, c corev1.Container, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return errors.Wrap(err, "cannot create volume directory")
	}
	switch {
	case v.Secret != nil:
		return rs.writeSource(dir, "Secret", v.Secret.SecretName, v.Secret.Items, v.Secret.Optional)
	case v.ConfigMap != nil:
		return rs.writeSource(dir, "ConfigMap", v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.Optional)
	case v.EmptyDir != nil:
		return nil
	case v.Projected != nil:
		for _, s := range v.Projected.Sources {
			var err error
			switch {
			case s.Secret != nil:
				err = rs.writeSource(dir, "Secret", s.Secret.Name, s.Secret.Items, s.Secret.Optional)
			case s.ConfigMap != nil:
				err = rs.writeSource(dir, "ConfigMap", s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional)
			case s.ServiceAccountToken != nil:
				err = writeFile(dir, s.ServiceAccountToken.Path, []byte("conformance-fake-token"))
			case s.DownwardAPI != nil:
				err = rs.writeDownward(dir, s.DownwardAPI.Items, w, c)
			default:
				err = errors.New("unsupported projected volume source")
			}
			if err != nil {
				return err
			}
		}
		return nil
	case v.DownwardAPI != nil:
		return rs.writeDownward(dir, v.DownwardAPI.Items, w, c)
	default:
		return errors.New("unsupported volume type; only secret, configMap, projected, downwardAPI and emptyDir volumes can be reproduced")
	}
}

// writeSource writes the keys of a Secret or ConfigMap into dir.
func (rs *Resolver) writeSource(dir, kind, name string, items []corev1.KeyToPath, optional *bool) error {
	data, found, err := rs.source(kind, name)
	if err != nil {
		return err
	}
	if !found {
		if optional != nil && *optional {
			return nil
		}
		return errors.Errorf("%s %s is neither composed nor a user-provided Secret named in the claim's spec", kind, name)
	}
	if len(items) == 0 {
		for k, v := range data {
			if err := writeFile(dir, k, v); err != nil {
				return err
			}
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional != nil && *optional {
				continue
			}
			return errors.Errorf("%s %s has no key %s", kind, name, it.Key)
		}
		if err := writeFile(dir, it.Path, v); err != nil {
			return err
		}
	}
	return nil
}

// source returns a Secret's or ConfigMap's data.
func (rs *Resolver) source(kind, name string) (map[string][]byte, bool, error) {
	if kind == "ConfigMap" {
		return rs.Sources.ConfigMap(name)
	}
	return rs.Sources.Secret(name)
}

// writeDownward writes downward API files.
func (rs *Resolver) writeDownward(dir string, items []corev1.DownwardAPIVolumeFile, w Workload, c corev1.Container) error {
	for _, it := range items {
		var v string
		var err error
		switch {
		case it.FieldRef != nil:
			v, err = rs.field(it.FieldRef.FieldPath, w)
		case it.ResourceFieldRef != nil:
			v, err = resourceField(it.ResourceFieldRef, c)
		}
		if err != nil {
			return err
		}
		if err := writeFile(dir, it.Path, []byte(v)); err != nil {
			return err
		}
	}
	return nil
}

// env resolves c's environment as the kubelet would: envFrom first, then
// env, with $(VAR) references to earlier variables expanded.
func (rs *Resolver) env(w Workload, c corev1.Container) ([]EnvVar, error) {
	var out []EnvVar
	vars := map[string]string{}
	add := func(name, value string) {
		out = append(out, EnvVar{Name: name, Value: value})
		vars[name] = value
	}
	for _, ef := range c.EnvFrom {
		kind, name, optional := "ConfigMap", "", (*bool)(nil)
		switch {
		case ef.SecretRef != nil:
			kind, name, optional = "Secret", ef.SecretRef.Name, ef.SecretRef.Optional
		case ef.ConfigMapRef != nil:
			name, optional = ef.ConfigMapRef.Name, ef.ConfigMapRef.Optional
		}
		data, found, err := rs.source(kind, name)
		if err != nil {
			return nil, err
		}
		if !found && (optional == nil || !*optional) {
			return nil, errors.Errorf("envFrom %s %s is neither composed nor user-provided", kind, name)
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			add(ef.Prefix+k, string(data[k]))
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			add(e.Name, Expand(e.Value, vars))
			continue
		}
		v, skip, err := rs.valueFrom(e, w, c)
		if err != nil {
			return nil, errors.Wrapf(err, "env %s", e.Name)
		}
		if !skip {
			add(e.Name, v)
		}
	}
	return out, nil
}

// valueFrom resolves an env var's valueFrom. skip is true for an optional
// reference to something absent.
func (rs *Resolver) valueFrom(e corev1.EnvVar, w Workload, c corev1.Container) (v string, skip bool, err error) {
	src := e.ValueFrom
	switch {
	case src.SecretKeyRef != nil || src.ConfigMapKeyRef != nil:
		var kind string
		var sel corev1.SecretKeySelector
		if s := src.SecretKeyRef; s != nil {
			kind, sel = "Secret", *s
		} else {
			s := src.ConfigMapKeyRef
			kind, sel = "ConfigMap", corev1.SecretKeySelector{LocalObjectReference: s.LocalObjectReference, Key: s.Key, Optional: s.Optional}
		}
		name, key, optional := sel.Name, sel.Key, sel.Optional
		data, found, err := rs.source(kind, name)
		if err != nil {
			return "", false, err
		}
		val, ok := data[key]
		if !found || !ok {
			if optional != nil && *optional {
				return "", true, nil
			}
			return "", false, errors.Errorf("%s %s key %s is neither composed nor a user-provided Secret named in the claim's spec", kind, name, key)
		}
		return string(val), false, nil
	case src.FieldRef != nil:
		v, err := rs.field(src.FieldRef.FieldPath, w)
		return v, false, err
	case src.ResourceFieldRef != nil:
		v, err := resourceField(src.ResourceFieldRef, c)
		return v, false, err
	default:
		return "", false, errors.New("unsupported valueFrom")
	}
}

// field resolves a downward API field path for the fake pod.
func (rs *Resolver) field(fieldPath string, w Workload) (string, error) {
	switch fieldPath {
	case "metadata.name":
		return PodName(w), nil
	case "metadata.namespace":
		if w.Namespace != "" {
			return w.Namespace, nil
		}
		return rs.Namespace, nil
	case "metadata.uid":
		return fakeUID, nil
	case "spec.nodeName":
		return "conformance-node", nil
	case "spec.serviceAccountName":
		return w.Pod.ServiceAccountName, nil
	case "status.podIP", "status.hostIP":
		return "127.0.0.1", nil
	case "status.podIPs", "status.hostIPs":
		return "127.0.0.1", nil
	default:
		return "", errors.Errorf("unsupported fieldRef %s", fieldPath)
	}
}

// PodName is the name a first pod of w would get.
func PodName(w Workload) string {
	if w.Kind == "StatefulSet" {
		return w.Name + "-0"
	}
	return w.Name + "-conformance"
}

// resourceField resolves a resourceFieldRef against c's resources, rounding
// up as the kubelet does.
func resourceField(ref *corev1.ResourceFieldSelector, c corev1.Container) (string, error) {
	var q resource.Quantity
	var ok bool
	switch {
	case strings.HasPrefix(ref.Resource, "limits."):
		q, ok = c.Resources.Limits[corev1.ResourceName(strings.TrimPrefix(ref.Resource, "limits."))]
	case strings.HasPrefix(ref.Resource, "requests."):
		q, ok = c.Resources.Requests[corev1.ResourceName(strings.TrimPrefix(ref.Resource, "requests."))]
	}
	if !ok {
		return "", errors.Errorf("container %s has no %s", c.Name, ref.Resource)
	}
	div := ref.Divisor
	if div.IsZero() {
		div = resource.MustParse("1")
	}
	if strings.HasSuffix(ref.Resource, ".cpu") {
		n, d := q.MilliValue(), div.MilliValue()
		return fmt.Sprint((n + d - 1) / d), nil
	}
	n, d := q.Value(), div.Value()
	return fmt.Sprint((n + d - 1) / d), nil
}

// varRef matches $(VAR) and the $$ escape.
var varRef = regexp.MustCompile(`\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)`)

// Expand expands $(VAR) references as Kubernetes does: defined variables
// are substituted, undefined references are kept verbatim and $$ escapes $.
func Expand(s string, vars map[string]string) string {
	return varRef.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		if v, ok := vars[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

// ConfigFlags returns the files named by --config flags. pflag accepts
// "--config f", "--config=f", repeated flags and comma-separated lists.
func ConfigFlags(args []string) []string {
	var files []string
	for i := 0; i < len(args); i++ {
		var v string
		switch a := args[i]; {
		case (a == "--config" || a == "-config") && i+1 < len(args):
			v = args[i+1]
			i++
		case strings.HasPrefix(a, "--config="):
			v = strings.TrimPrefix(a, "--config=")
		default:
			continue
		}
		for f := range strings.SplitSeq(v, ",") {
			if f != "" {
				files = append(files, f)
			}
		}
	}
	return files
}

// A Rewriter replaces references to mount paths by the local paths standing
// in for them, for the test's own reading of the files a process reads.
type Rewriter struct {
	// mounts are the mount paths, longest first so /config/sub wins over
	// /config.
	mounts []string
	local  map[string]string
}

// NewRewriter returns a Rewriter for mounts (mount path to local path).
func NewRewriter(mounts map[string]string) *Rewriter {
	rw := &Rewriter{local: mounts}
	for m := range mounts {
		rw.mounts = append(rw.mounts, m)
	}
	sort.Slice(rw.mounts, func(i, j int) bool { return len(rw.mounts[i]) > len(rw.mounts[j]) })
	return rw
}

// Rewrite replaces mount path references in s in a single pass, so a local
// path (which may itself start with a mount path such as /tmp) is never
// rewritten again. A mount path counts only as a whole path, or a path
// prefix, that starts a value: not inside a URL or another path.
func (rw *Rewriter) Rewrite(s string) string {
	const before, after = " \t\r\n\"'=:,[(", " \t\r\n\"',])/"
	var b strings.Builder
	for i := 0; i < len(s); {
		if i == 0 || strings.IndexByte(before, s[i-1]) >= 0 {
			if m, ok := rw.match(s[i:], after); ok {
				b.WriteString(rw.local[m])
				i += len(m)
				continue
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// match returns the longest mount path s starts with, if the character
// after it (if any) is in after.
func (rw *Rewriter) match(s, after string) (string, bool) {
	for _, m := range rw.mounts {
		if strings.HasPrefix(s, m) && (len(s) == len(m) || strings.IndexByte(after, s[len(m)]) >= 0) {
			return m, true
		}
	}
	return "", false
}

// writeFile writes data to dir/name, creating parent directories.
func writeFile(dir, name string, data []byte) error {
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return errors.Wrap(err, "cannot create volume directory")
	}
	// Keys come from the render and name files in a test directory.
	return errors.Wrapf(os.WriteFile(p, data, 0o600), "cannot write %s", name)
}
