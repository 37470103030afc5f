package armada

import (
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const apiHelm = "helm.m.crossplane.io/v1beta1"

// pulsarProfile is the Apache Pulsar chart values of a profile. The
// chart's defaults run three of everything plus a proxy, a toolset and a
// monitoring stack; Armada needs only ZooKeeper, BookKeeper and brokers.
func pulsarProfile(profile, storageClass string) map[string]any {
	replicas, quorum, antiAffinity := int64(1), "1", false
	journal, ledgers, zk := "5Gi", "10Gi", "5Gi"
	if profile == pulsarProfileHA {
		replicas, quorum, antiAffinity = 3, "2", true
		journal, ledgers, zk = "10Gi", "50Gi", "20Gi"
	}
	volume := func(size string) map[string]any {
		v := map[string]any{"size": size}
		if storageClass != "" {
			v["storageClassName"] = storageClass
		}
		return v
	}
	return map[string]any{
		"defaultPulsarImageTag": PulsarVersion,
		"components": map[string]any{
			"zookeeper": true, "bookkeeper": true, "autorecovery": true, "broker": true,
			"proxy": false, "toolset": false, "pulsar_manager": false,
		},
		"victoria-metrics-k8s-stack": map[string]any{"enabled": false},
		"affinity":                   map[string]any{"anti_affinity": antiAffinity},
		"zookeeper": map[string]any{
			"replicaCount": replicas,
			"volumes":      map[string]any{"data": volume(zk)},
		},
		"bookkeeper": map[string]any{
			"replicaCount": replicas,
			"volumes": map[string]any{
				"journal": volume(journal),
				"ledgers": volume(ledgers),
			},
		},
		"broker": map[string]any{
			"replicaCount": replicas,
			"configData": map[string]any{
				"managedLedgerDefaultEnsembleSize": quorum,
				"managedLedgerDefaultWriteQuorum":  quorum,
				"managedLedgerDefaultAckQuorum":    quorum,
			},
		},
	}
}

// pulsarRelease installs the Apache Pulsar chart through provider-helm.
// fullnameOverride fixes the Service names Armada connects to. The release
// is a stateful resource: spec.deletionPolicy Orphan keeps it installed
// when the claim goes.
func (in *Install) pulsarRelease() (*unstructured.Unstructured, error) {
	ic := in.Spec.Pulsar.InCluster
	values := pulsarProfile(ic.Profile, ic.StorageClass)
	values["fullnameOverride"] = in.object(servicePulsar)
	user, err := decodeConfig(ic.Values)
	if err != nil {
		return nil, errors.Wrap(err, "spec.pulsar.inCluster.values")
	}
	values = mergeConfig(values, user)
	// Applied over the user's values: validation refuses values that
	// set auth.
	values["auth"] = pulsarAuthValues()
	return in.unstructuredObject(apiHelm, "Release", in.pulsarReleaseName(), "pulsar", in.protect(map[string]any{
		"forProvider": map[string]any{
			"chart": map[string]any{
				"repository": pulsarChartRepository,
				"name":       pulsarChartName,
				"version":    pulsarChartVersion,
			},
			"namespace":           in.Namespace,
			"skipCreateNamespace": true,
			"wait":                true,
			"waitTimeout":         "20m",
			"values":              values,
		},
		"providerConfigRef": map[string]any{"kind": kindClusterPCRef, "name": in.Spec.ProviderConfigs.Helm},
	})), nil
}

// pulsarReleaseName is the Helm release's name (provider-helm installs a
// Release under its object's name), which the chart puts in every pod's
// release label and in the names of the token Secrets it mounts.
func (in *Install) pulsarReleaseName() string { return in.object("pulsar") }

// Mount points of the topic-init Job's optional credentials.
const (
	topicsTokenDir = "/pulsar-auth"
	topicsCADir    = "/pulsar-ca"
)

// topicsScript creates the tenant, the namespace, the partitioned events
// topic and the control-plane topic, each only if missing, and grows the
// events topic to the desired partition count. Running it twice is a no-op.
// Armada's producers and consumers use the full topic names it creates.
// It calls Pulsar's admin REST API (what pulsar-admin calls) with curl,
// which Pulsar's image has: no JVM to start, and nothing written. The
// token reaches curl on its standard input, never in its arguments.
const topicsScript = `set -euo pipefail
CURL=(curl --silent --show-error --max-time 60 -H "Content-Type: application/json")
if [[ -n "${CA_FILE:-}" ]]; then CURL+=(--cacert "$CA_FILE"); fi
# api METHOD PATH [BODY] prints the response's body, then its status on a
# line of its own.
api() {
  local args=(-X "$1" -w '\n%{http_code}' "$ADMIN_URL/admin/v2/$2")
  if [[ $1 != GET ]]; then args+=(--data "${3:-}"); fi
  if [[ -n "${TOKEN_FILE:-}" ]]; then
    printf 'header = "Authorization: Bearer %s"\n' "$(tr -d '\r\n' < "$TOKEN_FILE")" | "${CURL[@]}" --config - "${args[@]}"
  else
    "${CURL[@]}" "${args[@]}"
  fi
}
# call WHAT METHOD PATH [BODY] sets body and code, failing unless Pulsar answered.
call() {
  local what=$1 out; shift
  if ! out=$(api "$@"); then echo "cannot $what: no answer from $ADMIN_URL" >&2; return 1; fi
  code=${out##*$'\n'}
  body=${out%$'\n'*}
}
# ensure WHAT METHOD PATH [BODY] creates what, unless it exists (409).
ensure() {
  local what=$1; shift
  call "create $what" "$@"
  case $code in
  2??) echo "created $what" ;;
  409) echo "$what already exists" ;;
  *) echo "cannot create $what: HTTP $code: $body" >&2; return 1 ;;
  esac
}
call "list Pulsar clusters" GET clusters
cluster=$(printf '%s' "$body" | sed -n 's/^\[ *"\([^"]*\)".*/\1/p')
if [[ $code != 200 || -z "$cluster" ]]; then echo "cannot list Pulsar clusters at $ADMIN_URL: HTTP $code: $body" >&2; exit 1; fi
events=${EVENTS_TOPIC/:\/\//\/}
ensure "tenant $TENANT" PUT "tenants/$TENANT" "{\"allowedClusters\":[\"$cluster\"]}"
ensure "namespace $TENANT/$NAMESPACE" PUT "namespaces/$TENANT/$NAMESPACE"
ensure "topic $EVENTS_TOPIC" PUT "$events/partitions" "$PARTITIONS"
ensure "topic $CONTROL_PLANE_TOPIC" PUT "${CONTROL_PLANE_TOPIC/:\/\//\/}"
call "read the partition count of $EVENTS_TOPIC" GET "$events/partitions"
current=$(printf '%s' "$body" | tr -d ' \n' | sed -n 's/.*"partitions":\([0-9]*\).*/\1/p')
if [[ $code != 200 || -z "$current" ]]; then echo "cannot read the partition count of $EVENTS_TOPIC: HTTP $code: $body" >&2; exit 1; fi
if (( current < PARTITIONS )); then
  call "grow $EVENTS_TOPIC" POST "$events/partitions" "$PARTITIONS"
  if [[ $code != 2?? ]]; then echo "cannot grow $EVENTS_TOPIC to $PARTITIONS partitions: HTTP $code: $body" >&2; exit 1; fi
  echo "grew $EVENTS_TOPIC from $current to $PARTITIONS partitions"
elif (( current > PARTITIONS )); then
  echo "$EVENTS_TOPIC keeps its $current partitions: Pulsar cannot remove partitions"
fi
echo "Pulsar topics ready"
`

// topicsEnv is the topic-init Job's environment; it also names the Job.
func (in *Install) topicsEnv() []corev1.EnvVar {
	p := in.Spec.Pulsar
	env := []corev1.EnvVar{
		{Name: "ADMIN_URL", Value: strings.TrimSuffix(p.AdminURL, "/")},
		{Name: "TENANT", Value: p.Tenant},
		{Name: "NAMESPACE", Value: p.Namespace},
		{Name: "EVENTS_TOPIC", Value: in.topic(topicEvents)},
		{Name: "CONTROL_PLANE_TOPIC", Value: in.topic(topicControlPlane)},
		{Name: "PARTITIONS", Value: strconv.Itoa(int(p.EventsPartitions))},
	}
	if ref := p.TokenSecretRef; ref != nil {
		env = append(env, corev1.EnvVar{Name: "TOKEN_FILE", Value: topicsTokenDir + "/" + ref.Key})
	}
	if ref := p.CASecretRef; ref != nil {
		env = append(env, corev1.EnvVar{Name: "CA_FILE", Value: topicsCADir + "/" + ref.Key})
	}
	return env
}

// topicsJob is the topic-init Job, named by a hash of its pod spec.
func (in *Install) topicsJob() (*batchv1.Job, error) {
	p := in.Spec.Pulsar
	var vols []corev1.Volume
	var mounts []corev1.VolumeMount
	if ref := p.TokenSecretRef; ref != nil {
		vols = append(vols, corev1.Volume{Name: "pulsar-token", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: ref.Name}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "pulsar-token", MountPath: topicsTokenDir, ReadOnly: true})
	}
	if ref := p.CASecretRef; ref != nil {
		vols = append(vols, corev1.Volume{Name: "pulsar-ca", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: ref.Name}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "pulsar-ca", MountPath: topicsCADir, ReadOnly: true})
	}
	sc := RestrictedContainerSecurity()
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: in.meta("", "pulsar-topics"),
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](10),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: in.labels("pulsar-topics")},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptr.To(false),
					ImagePullSecrets:             in.Spec.ImagePullSecrets,
					SecurityContext:              RestrictedPodSecurity(pulsarUID, 0, nil),
					Containers: []corev1.Container{{
						Name:            "pulsar-topics",
						Image:           in.thirdPartyImage(pulsarImage),
						Command:         []string{"/bin/bash", "-c", topicsScript},
						Env:             in.topicsEnv(),
						VolumeMounts:    mounts,
						Resources:       topicJobResources(),
						SecurityContext: sc,
					}},
					Volumes: vols,
				},
			},
		},
	}
	// The name carries a hash of the pod spec (tenant, namespace,
	// partitions, URL, image, resources): a Job cannot be edited, so a
	// change runs a new one.
	hash, err := jobHash("", &job.Spec.Template.Spec)
	if err != nil {
		return nil, err
	}
	job.Name = in.object("pulsar-topics-" + hash[:8])
	return job, nil
}
