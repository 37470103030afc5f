package armada

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// With spec.redis.inCluster.sentinel the in-cluster Redis is a primary and
// replicas (one StatefulSet, each pod with its own append-only volume)
// watched by Redis Sentinel (a second StatefulSet), as Armada's production
// guidance asks. Armada's server and event ingester build their Redis
// client with go-redis's NewUniversalClient, which, given a masterName,
// asks the Sentinels at addrs for the primary and follows a failover
// (Armada's eventsApiRedis and redis blocks are go-redis UniversalOptions:
// masterName and sentinelPassword are among their keys).
//
// Every pod is reached by its stable name under a headless Service, and
// both Redis (replica-announce-ip) and the Sentinels (announce-hostnames)
// announce those names rather than pod IPs, which change on restart. A
// starting Redis pod asks the Sentinels for the current primary and
// replicates it; only when no Sentinel answers (the first start) is pod 0
// the primary. A starting Sentinel likewise monitors the primary the other
// Sentinels name, else pod 0.

const (
	// kindStatefulSet is a StatefulSet's kind.
	kindStatefulSet = "StatefulSet"
	// redisVolume is the Redis and Sentinel pods' volume, at /data.
	redisVolume = "data"
	// componentSentinel names the Sentinel pods.
	componentSentinel = "redis-sentinel"
	// sentinelPort is Redis Sentinel's port.
	sentinelPort = 26379
	// SentinelMaster is the name the Sentinels monitor the primary
	// under: Armada's masterName.
	SentinelMaster = "armada"
	// defaultRedisReplicas and defaultSentinels size a Sentinel Redis.
	defaultRedisReplicas = 3
	defaultSentinels     = 3

	keyRedisSentinelStatefulSet = "redis-incluster-sentinel-statefulset"
	keyRedisSentinelService     = "redis-incluster-sentinel-service"
)

// sentinelOn reports whether the in-cluster Redis runs with Sentinel.
func (in *Install) sentinelOn() bool {
	return in.Spec.Redis.Mode == modeInCluster && in.Spec.Redis.InCluster != nil && in.Spec.Redis.InCluster.Sentinel != nil
}

// podHost is the stable name of pod i of a StatefulSet whose Service is
// headless.
func (in *Install) podHost(component string, i int) string {
	return fmt.Sprintf("%s-%d.%s", in.object(component), i, in.serviceHost(component))
}

// sentinelAddrs are every Sentinel pod's address: Armada's Redis addrs.
func (in *Install) sentinelAddrs() []string {
	n := int(*in.Spec.Redis.InCluster.Sentinel.Sentinels)
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, net.JoinHostPort(in.podHost(componentSentinel, i), strconv.Itoa(sentinelPort)))
	}
	return out
}

// findPrimaryScript sets $1 and $2 to the primary the Sentinels name, or
// to pod 0 ($PRIMARY_HOST:$PRIMARY_PORT) when none answers.
const findPrimaryScript = `set -u
primary=$(redis-cli --no-auth-warning -a "$REDIS_PASSWORD" -h "$SENTINEL_HOST" -p "$SENTINEL_PORT" \
  sentinel get-master-addr-by-name "$SENTINEL_MASTER" 2>/dev/null) || primary=""
set -- $primary
case "${2:-}" in
''|*[!0-9]*) set -- "$PRIMARY_HOST" "$PRIMARY_PORT" ;;
esac
`

// RedisStartScript starts a Redis pod of a Sentinel Redis: as a replica of
// the primary the Sentinels name, or of pod 0 ($PRIMARY_HOST) when none
// answers, unless that primary is this pod ($SELF_HOST:$REDIS_PORT). Its Sentinel
// query goes to the Sentinels' headless Service, which lists them all.
// Every host and port is a variable, so the same script runs on loopback
// in the tests.
const RedisStartScript = findPrimaryScript + `if [ "$1:$2" = "$SELF_HOST:$REDIS_PORT" ]; then set --; else set -- --replicaof "$1" "$2"; fi
exec redis-server --port "$REDIS_PORT" --dir /data --appendonly yes \
  --requirepass "$REDIS_PASSWORD" --masterauth "$REDIS_PASSWORD" \
  --replica-announce-ip "$SELF_HOST" "$@"
`

// SentinelStartScript starts a Sentinel: it writes its config (which
// Sentinel rewrites as it learns) to its volume, monitoring the primary
// the other Sentinels name, or pod 0 when none answers, and requiring the
// Redis password of its clients too.
const SentinelStartScript = findPrimaryScript + `cat > /data/sentinel.conf <<EOC
port $SENTINEL_PORT
dir /data
sentinel resolve-hostnames yes
sentinel announce-hostnames yes
sentinel announce-ip $SELF_HOST
requirepass "$REDIS_PASSWORD"
sentinel monitor $SENTINEL_MASTER $1 $2 $SENTINEL_QUORUM
sentinel auth-pass $SENTINEL_MASTER $REDIS_PASSWORD
sentinel sentinel-pass $REDIS_PASSWORD
sentinel down-after-milliseconds $SENTINEL_MASTER $SENTINEL_DOWN_AFTER_MS
sentinel failover-timeout $SENTINEL_MASTER 60000
sentinel parallel-syncs $SENTINEL_MASTER 1
EOC
exec redis-server /data/sentinel.conf --sentinel
`

// sentinelDownAfterMs is how long a primary is unreachable before the
// Sentinels fail it over.
const sentinelDownAfterMs = 5000

// sentinelEnv is what both start scripts read: the password, where this
// pod and the Sentinels are, and pod 0, the first primary. $(POD_NAME) is
// expanded by the kubelet.
func (in *Install) sentinelEnv(component string) []corev1.EnvVar {
	sn := in.Spec.Redis.InCluster.Sentinel
	return []corev1.EnvVar{
		secretEnv("REDIS_PASSWORD", in.credentialsSecret(), redisPassword),
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
		{Name: "SELF_HOST", Value: "$(POD_NAME)." + in.serviceHost(component)},
		{Name: "PRIMARY_HOST", Value: in.podHost(serviceRedis, 0)},
		{Name: "PRIMARY_PORT", Value: strconv.Itoa(redisPort)},
		{Name: "REDIS_PORT", Value: strconv.Itoa(redisPort)},
		{Name: "SENTINEL_HOST", Value: in.serviceHost(componentSentinel)},
		{Name: "SENTINEL_PORT", Value: strconv.Itoa(sentinelPort)},
		{Name: "SENTINEL_MASTER", Value: SentinelMaster},
		{Name: "SENTINEL_QUORUM", Value: strconv.Itoa(int(*sn.Sentinels)/2 + 1)},
		{Name: "SENTINEL_DOWN_AFTER_MS", Value: strconv.Itoa(sentinelDownAfterMs)},
	}
}

// sentinelRedis turns the single Redis StatefulSet into the primary and
// replicas of a Sentinel Redis.
func (in *Install) sentinelRedis(sts *appsv1.StatefulSet) {
	sts.Spec.Replicas = ptr.To(*in.Spec.Redis.InCluster.Sentinel.Replicas)
	// Pods start and stop one at a time (OrderedReady): pod 0 is the
	// first primary and must be up before its replicas.
	c := &sts.Spec.Template.Spec.Containers[0]
	c.Command = []string{"sh", "-c", RedisStartScript}
	c.Args = nil
	c.Env = in.sentinelEnv(serviceRedis)
	sts.Spec.Template.Annotations = rotationAnnotations(in.passwordRotationHash(c.Env))
}

// sentinelStatefulSet runs the Sentinels. Their state is rebuilt from the
// Redis pods on restart, so it lives on an emptyDir.
func (in *Install) sentinelStatefulSet() *appsv1.StatefulSet {
	ic := in.Spec.Redis.InCluster
	image := ic.Image
	if image == "" {
		image = in.thirdPartyImage(redisImage)
	}
	env := in.sentinelEnv(componentSentinel)
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("sentinel")}}, PeriodSeconds: 10}
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: kindStatefulSet},
		ObjectMeta: in.meta(in.object(componentSentinel), componentSentinel),
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(*ic.Sentinel.Sentinels),
			ServiceName:         in.object(componentSentinel),
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: in.selector(componentSentinel)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: in.labels(componentSentinel), Annotations: rotationAnnotations(in.passwordRotationHash(env))},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken: ptr.To(false),
					ImagePullSecrets:             in.Spec.ImagePullSecrets,
					SecurityContext:              redisPodSecurity(),
					Containers: []corev1.Container{{
						Name:            componentSentinel,
						Image:           image,
						Command:         []string{"sh", "-c", SentinelStartScript},
						Env:             env,
						Ports:           []corev1.ContainerPort{{Name: "sentinel", ContainerPort: sentinelPort, Protocol: corev1.ProtocolTCP}},
						Resources:       sentinelResources(),
						ReadinessProbe:  probe,
						LivenessProbe:   probe,
						VolumeMounts:    []corev1.VolumeMount{{Name: redisVolume, MountPath: "/data"}},
						SecurityContext: RestrictedContainerSecurity(),
					}},
					Volumes: []corev1.Volume{{Name: redisVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				},
			},
		},
	}
}

// headlessService gives each pod of a StatefulSet its stable name, ready
// or not: a starting pod must be reachable by the Sentinels.
func (in *Install) headlessService(component, port string, number int32) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: in.meta(in.object(component), component),
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector:                 in.selector(component),
			Ports:                    []corev1.ServicePort{{Name: port, Port: number, TargetPort: intstr.FromString(port), Protocol: corev1.ProtocolTCP}},
		},
	}
}

// sentinelFlows are the connections among the Redis and Sentinel pods.
func (in *Install) sentinelFlows() []flow {
	if !in.sentinelOn() {
		return nil
	}
	redis := endpoint{Pod: serviceRedis, Ports: []int32{redisPort}}
	sentinel := endpoint{Pod: componentSentinel, Ports: []int32{sentinelPort}}
	return []flow{
		dnsFlow(serviceRedis),
		flowTo(serviceRedis, redis, "replication from the primary"),
		flowTo(serviceRedis, sentinel, "the current primary, at start"),
		dnsFlow(componentSentinel),
		flowTo(componentSentinel, redis, "Sentinel monitoring and failover"),
		flowTo(componentSentinel, sentinel, "Sentinel gossip and the current primary, at start"),
	}
}

// sentinelEnvName is the variable that sets a Redis block's
// sentinelPassword.
func sentinelEnvName(redisKey string) string {
	return "ARMADA_" + strings.ToUpper(redisKey) + "_SENTINELPASSWORD"
}
