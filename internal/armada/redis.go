package armada

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// The in-cluster Redis is a composed StatefulSet rather than a Helm release:
// Armada needs one Redis with a password and a volume, nothing a chart adds
// is used, and composing it keeps the pod restricted-PSS compliant, its
// image pinned and its readiness observable without another provider.

// redisStatefulSet runs one Redis with an append-only file on a volume that
// outlives the StatefulSet unless spec.deletionPolicy is Delete.
func (in *Install) redisStatefulSet() *appsv1.StatefulSet {
	ic := in.Spec.Redis.InCluster
	image := ic.Image
	if image == "" {
		image = in.thirdPartyImage(redisImage)
	}
	retain := appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	if in.Spec.DeletionPolicy == deletionDelete {
		retain = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	}
	pvc := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: redisVolume, Labels: in.labels(serviceRedis)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: *ic.StorageSize}},
		},
	}
	if ic.StorageClass != "" {
		pvc.Spec.StorageClassName = ptr.To(ic.StorageClass)
	}
	res := mergeResources(redisResources(), ic.Resources)
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("redis")}}, PeriodSeconds: 10}
	labels := in.labels(serviceRedis)
	env := []corev1.EnvVar{secretEnv("REDIS_PASSWORD", in.credentialsSecret(), redisPassword)}
	sts := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: kindStatefulSet},
		ObjectMeta: in.meta(in.object(serviceRedis), serviceRedis),
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To[int32](1),
			ServiceName: in.object(serviceRedis),
			Selector:    &metav1.LabelSelector{MatchLabels: in.selector(serviceRedis)},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: retain, WhenScaled: retain,
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{pvc},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: rotationAnnotations(in.passwordRotationHash(env))},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken: ptr.To(false),
					ImagePullSecrets:             in.Spec.ImagePullSecrets,
					SecurityContext:              redisPodSecurity(),
					Containers: []corev1.Container{{
						Name:    serviceRedis,
						Image:   image,
						Command: []string{"redis-server"},
						// The kubelet expands $(REDIS_PASSWORD) from the
						// Secret; it never appears in the object.
						Args:            []string{"--port", "6379", "--dir", "/data", "--appendonly", "yes", "--requirepass", "$(REDIS_PASSWORD)"},
						Env:             env,
						Ports:           []corev1.ContainerPort{{Name: "redis", ContainerPort: redisPort, Protocol: corev1.ProtocolTCP}},
						Resources:       res,
						ReadinessProbe:  probe,
						LivenessProbe:   probe,
						VolumeMounts:    []corev1.VolumeMount{{Name: redisVolume, MountPath: "/data"}},
						SecurityContext: RestrictedContainerSecurity(),
					}},
				},
			},
		},
	}
	if in.sentinelOn() {
		in.sentinelRedis(sts)
	}
	return sts
}

// redisService is the in-cluster Redis's Service.
func (in *Install) redisService() *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: in.meta(in.object(serviceRedis), serviceRedis),
		Spec: corev1.ServiceSpec{
			Selector: in.selector(serviceRedis),
			Ports:    []corev1.ServicePort{{Name: "redis", Port: redisPort, TargetPort: intstr.FromString("redis"), Protocol: corev1.ProtocolTCP}},
		},
	}
}

// thirdPartyImage prefixes a non-Armada default image with
// spec.imageRegistry, as Armada's own images are.
func (in *Install) thirdPartyImage(ref string) string {
	if in.Spec.ImageRegistry == "" {
		return ref
	}
	return trimSlash(in.Spec.ImageRegistry) + "/" + ref
}

// redisPodSecurity is the pod security context of the in-cluster Redis's
// and its Sentinels' pods: Redis's own user, restricted.
func redisPodSecurity() *corev1.PodSecurityContext {
	return RestrictedPodSecurity(redisUID, redisUID, ptr.To[int64](redisUID))
}
