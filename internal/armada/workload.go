package armada

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Label keys every composed object carries.
const (
	labelName      = "app.kubernetes.io/name"
	labelInstance  = "app.kubernetes.io/instance"
	labelComponent = "app.kubernetes.io/component"
	labelPartOf    = "app.kubernetes.io/part-of"
	labelManagedBy = "app.kubernetes.io/managed-by"
	labelVersion   = "app.kubernetes.io/version"

	// annotationConfigHash rolls a workload's pods when its config changes.
	annotationConfigHash = "armadaproject.io/config-hash"
)

// selector labels pick one instance's pods.
func (in *Install) selector(component string) map[string]string {
	return map[string]string{labelName: "armada", labelInstance: in.Name, labelComponent: component}
}

// labels are an object's labels: its selector labels plus ownership.
func (in *Install) labels(component string) map[string]string {
	l := in.selector(component)
	l[labelPartOf] = partOfArmada
	l[labelManagedBy] = "function-armada"
	return l
}

// meta is a namespaced object's metadata.
func (in *Install) meta(name, component string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: in.Namespace, Labels: in.labels(component)}
}

// podSecurityContext is Armada's components' pod security context: the
// image's user, restricted.
func podSecurityContext() *corev1.PodSecurityContext {
	return RestrictedPodSecurity(runAsUser, runAsGroup, ptr.To[int64](runAsGroup))
}

// RestrictedPodSecurity is the one pod security context every composed pod
// starts from: it meets the "restricted" Pod Security Standard (non-root,
// the runtime's default seccomp profile), running as uid and gid, with
// fsGroup owning its volumes if set. The tests' own pods start from it too.
func RestrictedPodSecurity(uid, gid int64, fsGroup *int64) *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To(uid),
		RunAsGroup:     ptr.To(gid),
		FSGroup:        fsGroup,
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// RestrictedContainerSecurity is the one container security context every
// composed container has: it meets the "restricted" Pod Security Standard
// (no privilege escalation, every capability dropped) with a read-only root.
func RestrictedContainerSecurity() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// secretEnv is an environment variable read from a Secret key.
func secretEnv(name, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key},
	}}
}

// secretEnvs is how a workload gets every password it needs: from Secrets,
// through Armada's ARMADA_<KEY_PATH> environment overrides, never through
// its config file.
//
// A remote executor (id set) authenticates as its own identity, whose
// password is in its identity Secret in the worker cluster; the scheduler
// reads every remote identity's password from the connection Secret of the
// same name here, once it has arrived (see remoteIdentities).
func (in *Install) secretEnvs(c *component, replicas int32, id *remoteIdentity) []corev1.EnvVar {
	var env []corev1.EnvVar
	creds := in.credentialsSecret()
	for _, u := range in.apiUsers(c) {
		env = append(env, secretEnv(passwordEnv(u.Name), creds, u.Name))
	}
	if c.Auth == authInternal {
		for _, r := range in.remoteIdentities() {
			env = append(env, secretEnv(passwordEnv(r.User), r.Secret, identityKey))
		}
	}
	for _, l := range c.Clients {
		if id != nil {
			if id.User != id.Base {
				env = append(env, corev1.EnvVar{Name: "ARMADA_" + strings.ToUpper(l.Key) + "_BASICAUTH_USERNAME", Value: id.User})
			}
			env = append(env, secretEnv("ARMADA_"+strings.ToUpper(l.Key)+"_BASICAUTH_PASSWORD", id.Secret, "token"))
			continue
		}
		env = append(env, secretEnv("ARMADA_"+strings.ToUpper(l.Key)+"_BASICAUTH_PASSWORD", creds, l.User))
	}
	if c.LeaderElected && replicas > 1 {
		env = append(env,
			secretEnv("ARMADA_LEADER_LEADERCONNECTION_BASICAUTH_PASSWORD", creds, userServer),
			corev1.EnvVar{Name: "ARMADA_LEADER_PODNAME", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"},
			}})
	}
	if c.Database != "" {
		if ref := in.Spec.Postgres.PasswordSecretRef; ref != nil {
			env = append(env, secretEnv("ARMADA_POSTGRES_CONNECTION_PASSWORD", ref.Name, ref.Key))
		}
	}
	if ref := in.Spec.Redis.PasswordSecretRef; c.RedisKey != "" && ref != nil {
		env = append(env, secretEnv("ARMADA_"+strings.ToUpper(c.RedisKey)+"_PASSWORD", ref.Name, ref.Key))
		if in.sentinelOn() {
			env = append(env, secretEnv(sentinelEnvName(c.RedisKey), ref.Name, ref.Key))
		}
	}
	return env
}

// goMemLimit is 95% of the memory limit, as Armada's charts set it.
func goMemLimit(r corev1.ResourceRequirements) []corev1.EnvVar {
	mem, ok := r.Limits[corev1.ResourceMemory]
	if !ok {
		return nil
	}
	return []corev1.EnvVar{{Name: "GOMEMLIMIT", Value: fmt.Sprint(mem.Value() * 95 / 100)}}
}

// volumes mounts the config Secret, a writable /tmp and, for Pulsar users,
// the optional Pulsar token and CA.
func (in *Install) volumes(c *component, configSecret string) ([]corev1.Volume, []corev1.VolumeMount) {
	vols := []corev1.Volume{
		{Name: "config", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: configSecret}}},
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	mounts := []corev1.VolumeMount{
		{Name: "config", MountPath: configDir, ReadOnly: true},
		{Name: "tmp", MountPath: "/tmp"},
	}
	if !c.Pulsar {
		return vols, mounts
	}
	if ref := in.Spec.Pulsar.TokenSecretRef; ref != nil {
		vols = append(vols, corev1.Volume{Name: "pulsar-token", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: ref.Name}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "pulsar-token", MountPath: pulsarTokenDir, ReadOnly: true})
	}
	if ref := in.Spec.Pulsar.CASecretRef; ref != nil {
		vols = append(vols, corev1.Volume{Name: "pulsar-ca", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: ref.Name}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "pulsar-ca", MountPath: pulsarCADir, ReadOnly: true})
	}
	return vols, mounts
}

// ports are the container ports a component serves.
func ports(c *component) []corev1.ContainerPort {
	var p []corev1.ContainerPort
	if c.GRPC {
		p = append(p, corev1.ContainerPort{Name: "grpc", ContainerPort: portGRPC, Protocol: corev1.ProtocolTCP})
	}
	if c.HTTP {
		p = append(p, corev1.ContainerPort{Name: "http", ContainerPort: portHTTP, Protocol: corev1.ProtocolTCP})
	}
	return append(p, corev1.ContainerPort{Name: portNameMetrics, ContainerPort: portMetrics, Protocol: corev1.ProtocolTCP})
}

// probes are a component's readiness and liveness probes, over HTTPS if
// its HTTP port serves TLS.
func probes(c *component, https bool) (readiness, liveness *corev1.Probe) {
	handler := corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromString("http")}}
	if https {
		handler.HTTPGet.Scheme = corev1.URISchemeHTTPS
	}
	if c.Probe == probeTCP {
		handler = corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString(portNameMetrics)}}
	}
	readiness = &corev1.Probe{ProbeHandler: handler, InitialDelaySeconds: 5, PeriodSeconds: 10, FailureThreshold: 3}
	liveness = &corev1.Probe{ProbeHandler: handler, InitialDelaySeconds: 10, PeriodSeconds: 10, FailureThreshold: 6}
	return readiness, liveness
}

// defaultAffinity spreads an instance's replicas across nodes when it can.
func (in *Install) defaultAffinity(component string) *corev1.Affinity {
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 100,
			PodAffinityTerm: corev1.PodAffinityTerm{
				LabelSelector: &metav1.LabelSelector{MatchLabels: in.selector(component)},
				TopologyKey:   corev1.LabelHostname,
			},
		}},
	}}
}

// podOptions are what a pod template is built from.
type podOptions struct {
	// Component is the table row; Name the instance (or Job) name.
	Component *component
	Name      string
	// Image, Args and Resources of the single container.
	Image     string
	Args      []string
	Resources corev1.ResourceRequirements
	// Env is set before the Secret-backed environment.
	Env []corev1.EnvVar
	// ConfigSecret is mounted at /config.
	ConfigSecret string
	// ConfigHash is stamped on the template so config changes roll pods.
	ConfigHash string
	// Version is stamped as app.kubernetes.io/version.
	Version string
	// Replicas decides leader-election wiring.
	Replicas int32
	// Long-running pods get probes, a ServiceAccount and scheduling
	// settings; migration pods do not.
	LongRunning bool
	// Settings are the user's scheduling settings.
	Settings *podSettings
	// Identity is a remote executor's: its client password comes from its
	// identity Secret in the worker cluster.
	Identity *remoteIdentity
	// Volumes and VolumeMounts are added to the pod's own.
	Volumes      []corev1.Volume
	VolumeMounts []corev1.VolumeMount
}

// podSettings are the user's scheduling constraints for a pod.
type podSettings struct {
	NodeSelector              map[string]string
	Tolerations               []corev1.Toleration
	Affinity                  *corev1.Affinity
	TopologySpreadConstraints []corev1.TopologySpreadConstraint
}

// podTemplate builds a pod template that meets the restricted Pod Security
// Standard and carries passwords only through Secret references.
func (in *Install) podTemplate(o podOptions) corev1.PodTemplateSpec {
	vols, mounts := in.volumes(o.Component, o.ConfigSecret)
	vols, mounts = append(vols, o.Volumes...), append(mounts, o.VolumeMounts...)
	env := append(append(o.Env, in.secretEnvs(o.Component, o.Replicas, o.Identity)...), goMemLimit(o.Resources)...)
	ctr := corev1.Container{
		Name:            o.Component.Name,
		Image:           o.Image,
		Args:            o.Args,
		Env:             env,
		Resources:       o.Resources,
		VolumeMounts:    mounts,
		SecurityContext: RestrictedContainerSecurity(),
	}
	labels := in.labels(o.Name)
	labels[labelVersion] = o.Version
	annotations := map[string]string{annotationConfigHash: o.ConfigHash}
	if h := in.passwordRotationHash(env); h != "" {
		annotations[annotationRotationHash] = h
	}
	tpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{
			Containers:                   []corev1.Container{ctr},
			Volumes:                      vols,
			SecurityContext:              podSecurityContext(),
			ImagePullSecrets:             in.Spec.ImagePullSecrets,
			AutomountServiceAccountToken: ptr.To(false),
		},
	}
	if !o.LongRunning {
		tpl.Spec.RestartPolicy = corev1.RestartPolicyNever
		return tpl
	}
	c := &tpl.Spec.Containers[0]
	c.Ports = ports(o.Component)
	c.ReadinessProbe, c.LivenessProbe = probes(o.Component, in.servesTLS(o.Component) && o.Component.TLSHTTP)
	tpl.Spec.ServiceAccountName = in.object(o.Name)
	tpl.Spec.AutomountServiceAccountToken = ptr.To(o.Component.KubeAPI)
	s := o.Settings
	tpl.Spec.NodeSelector = s.NodeSelector
	tpl.Spec.Tolerations = s.Tolerations
	tpl.Spec.TopologySpreadConstraints = s.TopologySpreadConstraints
	tpl.Spec.Affinity = s.Affinity
	if tpl.Spec.Affinity == nil {
		tpl.Spec.Affinity = in.defaultAffinity(o.Name)
	}
	in.withTLSProxy(&tpl, o.Component)
	return tpl
}

// deployment is a stateless instance's Deployment.
func (in *Install) deployment(name string, replicas int32, tpl corev1.PodTemplateSpec) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: in.meta(in.object(name), name),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: in.selector(name)},
			Template: tpl,
			Strategy: appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr.To(intstr.FromInt32(1))},
			},
		},
	}
}

// statefulSet is a leader-elected instance's StatefulSet: each pod gets a
// stable DNS name through the headless Service, which Armada's leader
// connection needs.
func (in *Install) statefulSet(name string, replicas int32, tpl corev1.PodTemplateSpec) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: kindStatefulSet},
		ObjectMeta: in.meta(in.object(name), name),
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(replicas),
			ServiceName:         in.object(name + "-headless"),
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: in.selector(name)},
			Template:            tpl,
			UpdateStrategy:      appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
		},
	}
}

// service exposes an instance's ports; headless services govern
// StatefulSets.
func (in *Install) service(name, objectName string, c *component, headless bool) *corev1.Service {
	cp := ports(c)
	sp := make([]corev1.ServicePort, 0, len(cp))
	for _, p := range cp {
		sp = append(sp, corev1.ServicePort{Name: p.Name, Port: p.ContainerPort, TargetPort: intstr.FromString(p.Name), Protocol: corev1.ProtocolTCP})
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: in.meta(objectName, name),
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: in.selector(name), Ports: sp},
	}
	if headless {
		svc.Spec.ClusterIP = corev1.ClusterIPNone
		svc.Spec.PublishNotReadyAddresses = true
		svc.Labels[labelHeadless] = "true"
	}
	return svc
}

// serviceAccount is an instance's ServiceAccount; only components that
// talk to the Kubernetes API get a token.
func (in *Install) serviceAccount(name string, c *component) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:                     metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta:                   in.meta(in.object(name), name),
		AutomountServiceAccountToken: ptr.To(c.KubeAPI),
	}
}

// podDisruptionBudget lets at most one pod of an instance be evicted at a
// time.
func (in *Install) podDisruptionBudget(name string) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: in.meta(in.object(name), name),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: in.selector(name)},
		},
	}
}
