package conformance

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

// invocation is how one rendered container runs outside Kubernetes: its
// binary's arguments and environment exactly as the pod would have them,
// and its volumes written to local directories, which the process sees at
// their mount paths (podCommand).
type invocation struct {
	// Workload and Container identify where it came from.
	Workload, Container string
	// Component is the Armada binary, e.g. "server".
	Component string
	// Tag is the image tag.
	Tag string
	// Args are the binary's arguments.
	Args []string
	// Env is the container's environment, in the pod's order.
	Env []envVar
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

// envVar is one environment variable.
type envVar struct{ Name, Value string }

// Lookup returns the value of an environment variable.
func (inv *invocation) Lookup(name string) (string, bool) {
	for _, e := range slices.Backward(inv.Env) {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

// resolver turns rendered containers into invocations.
type resolver struct {
	render *render
	// supplied are the values of Secrets the user provides rather than the
	// render, such as the Postgres password.
	supplied map[secretRef]string
	// namespace stands in for metadata.namespace of workloads that have
	// none.
	namespace string
}

// fakeUID stands in for metadata.uid.
const fakeUID = "00000000-0000-4000-8000-000000000000"

// Invocation reconstructs a container of w. Files of the volumes it mounts
// are written under root.
func (rs *resolver) Invocation(w workload, c corev1.Container, root string) (*invocation, error) {
	comp, tag, ok := componentForImage(c.Image)
	if !ok {
		return nil, errors.Errorf("image %q is not an Armada image", c.Image)
	}
	inv := &invocation{Workload: w.ID(), Container: c.Name, Component: comp, Tag: tag, Mounts: map[string]string{}, Ports: map[string]int32{}, Readiness: c.ReadinessProbe}
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
	args := c.Args
	if len(c.Command) > 0 {
		// The entrypoint is the image's binary; a command must name an
		// Armada binary (the lookout image also holds lookoutingester).
		b := path.Base(c.Command[0])
		if !slices.Contains(binaries, b) {
			return nil, errors.Errorf("command %q runs no Armada binary", c.Command[0])
		}
		inv.Component = b
		args = append(slices.Clone(c.Command[1:]), c.Args...)
	}
	vars := map[string]string{}
	for _, e := range env {
		vars[e.Name] = e.Value
	}
	for _, a := range args {
		inv.Args = append(inv.Args, expand(a, vars))
	}
	inv.Env = env
	rw := newRewriter(inv.Mounts)
	for _, f := range configFlags(inv.Args) {
		inv.ConfigFiles = append(inv.ConfigFiles, rw.Rewrite(f))
	}
	return inv, nil
}

// ScriptInvocation reconstructs a container of w that runs a script of
// the render's in a third-party image (the Pulsar topic-init Job): its
// command and args, environment and volumes exactly as rendered.
// Component is the container's name.
func (rs *resolver) ScriptInvocation(w workload, c corev1.Container, root string) (*invocation, error) {
	inv := &invocation{Workload: w.ID(), Container: c.Name, Component: c.Name, Mounts: map[string]string{}}
	if err := rs.mount(inv, w, c, root); err != nil {
		return nil, err
	}
	env, err := rs.env(w, c)
	if err != nil {
		return nil, err
	}
	vars := map[string]string{}
	for _, e := range env {
		vars[e.Name] = e.Value
	}
	for _, a := range append(slices.Clone(c.Command), c.Args...) {
		inv.Args = append(inv.Args, expand(a, vars))
	}
	if len(inv.Args) == 0 {
		return nil, errors.Errorf("container %s has no command: the test runs only the render's own scripts", c.Name)
	}
	inv.Env = env
	return inv, nil
}

// mount materialises every volume c mounts under root and records where
// each mount path points.
func (rs *resolver) mount(inv *invocation, w workload, c corev1.Container, root string) error {
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
func (rs *resolver) volume(v corev1.Volume, w workload, c corev1.Container, dir string) error {
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
func (rs *resolver) writeSource(dir, kind, name string, items []corev1.KeyToPath, optional *bool) error {
	data, found, err := rs.source(kind, name)
	if err != nil {
		return err
	}
	if !found {
		if optional != nil && *optional {
			return nil
		}
		return errors.Errorf("%s %s is neither in the render output nor a user-provided Secret named in the XR spec", kind, name)
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

// source returns a Secret's or ConfigMap's data from the render or, for a
// Secret, from the user-supplied values.
func (rs *resolver) source(kind, name string) (map[string][]byte, bool, error) {
	if kind == "ConfigMap" {
		return rs.render.ConfigMap(name)
	}
	data, found, err := rs.render.Secret(name)
	if err != nil {
		return nil, false, err
	}
	if !found {
		data = map[string][]byte{}
	}
	// Keys filled outside the render: the user's Secrets, and what a
	// worker cluster or provider-kubernetes writes into a rendered one.
	for ref, v := range rs.supplied {
		if _, rendered := data[ref.Key]; ref.Name == name && !rendered {
			data[ref.Key] = []byte(v)
		}
	}
	return data, found || len(data) > 0, nil
}

// writeDownward writes downward API files.
func (rs *resolver) writeDownward(dir string, items []corev1.DownwardAPIVolumeFile, w workload, c corev1.Container) error {
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
func (rs *resolver) env(w workload, c corev1.Container) ([]envVar, error) {
	var out []envVar
	vars := map[string]string{}
	add := func(name, value string) {
		out = append(out, envVar{Name: name, Value: value})
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
			return nil, errors.Errorf("envFrom %s %s is neither rendered nor user-provided", kind, name)
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
			add(e.Name, expand(e.Value, vars))
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
func (rs *resolver) valueFrom(e corev1.EnvVar, w workload, c corev1.Container) (v string, skip bool, err error) {
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
			return "", false, errors.Errorf("%s %s key %s is neither in the render output nor a user-provided Secret named in the XR spec", kind, name, key)
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
func (rs *resolver) field(fieldPath string, w workload) (string, error) {
	switch fieldPath {
	case "metadata.name":
		return podName(w), nil
	case "metadata.namespace":
		if w.Namespace != "" {
			return w.Namespace, nil
		}
		return rs.namespace, nil
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

// podName is the name a first pod of w would get.
func podName(w workload) string {
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

// expand expands $(VAR) references as Kubernetes does: defined variables
// are substituted, undefined references are kept verbatim and $$ escapes $.
func expand(s string, vars map[string]string) string {
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

// configFlags returns the files named by --config flags. pflag accepts
// "--config f", "--config=f", repeated flags and comma-separated lists.
func configFlags(args []string) []string {
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

// rewriter replaces references to mount paths by the local paths standing
// in for them, for the test's own reading of the files a process reads.
type rewriter struct {
	// mounts are the mount paths, longest first so /config/sub wins over
	// /config.
	mounts []string
	local  map[string]string
}

func newRewriter(mounts map[string]string) *rewriter {
	rw := &rewriter{local: mounts}
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
func (rw *rewriter) Rewrite(s string) string {
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
func (rw *rewriter) match(s, after string) (string, bool) {
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
