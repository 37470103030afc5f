package armada

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
)

// provider-armada authenticates to the composed server as this internal
// user, whose group holds the queue permissions.
const (
	userQueues        = "internal-queues"
	groupQueueAdmins  = "armada-queue-admins"
	keyQueueCreds     = "queue-credentials"
	keyProviderConfig = "queue-providerconfig"
	keyQueuePrefix    = "queue-"
)

// queuePermissions are the server permissions provider-armada needs.
var queuePermissions = []string{"create_queue", "delete_queue", "cordon_queue"}

// ProviderConfigName is the provider-armada ProviderConfig, in the
// Armada's namespace, that reaches its server.
func (in *Install) ProviderConfigName() string { return in.object("armada") }

// queueCredentials holds provider-armada's basic-auth username and password
// in the keys its ProviderConfig reads.
func (in *Install) queueCredentials(password string) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: kindSecret},
		ObjectMeta: in.meta(in.object("provider-armada"), "provider-armada"),
		Type:       corev1.SecretTypeBasicAuth,
		Data:       map[string][]byte{corev1.BasicAuthUsernameKey: []byte(userQueues), corev1.BasicAuthPasswordKey: []byte(password)},
	}
}

// providerConfig points provider-armada at the composed server over the
// in-cluster link every component uses: TLS trusting the private CA when
// spec.tls is on, else plaintext.
func (in *Install) providerConfig() *armadav1.ProviderConfig {
	secret := in.object("provider-armada")
	tls := armadav1.TLS{Insecure: true}
	if in.tlsOn() {
		tls = armadav1.TLS{CASecretRef: &armadav1.SecretKeySelector{Name: in.tlsSecret(), Key: tlsCAFile}}
		if in.certManager() {
			tls.CASecretRef.Name = in.certificateSecret(componentServer)
		}
	}
	return &armadav1.ProviderConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: armadav1.SchemeGroupVersion.String(), Kind: kindProviderConfig},
		ObjectMeta: in.meta(in.ProviderConfigName(), "provider-armada"),
		Spec: armadav1.ProviderConfigSpec{
			Endpoint: in.grpcAddress(componentServer),
			TLS:      tls,
			Credentials: armadav1.Credentials{
				Source: armadav1.CredentialsBasic,
				Basic: &armadav1.BasicAuth{
					UsernameSecretRef: armadav1.SecretKeySelector{Name: secret, Key: corev1.BasicAuthUsernameKey},
					PasswordSecretRef: armadav1.SecretKeySelector{Name: secret, Key: corev1.BasicAuthPasswordKey},
				},
			},
		},
	}
}

// Queue is a provider-armada Queue in this Armada, named <install>-queue-
// <queue>; Armada's name for it is the external name.
func (in *Install) Queue(name string, p armadav1.QueueParameters, component string) *armadav1.Queue {
	q := &armadav1.Queue{
		TypeMeta:   metav1.TypeMeta{APIVersion: armadav1.SchemeGroupVersion.String(), Kind: "Queue"},
		ObjectMeta: in.meta(in.object("queue-"+name), component),
		Spec: armadav1.QueueSpec{
			ManagedResourceSpec: xpv2.ManagedResourceSpec{
				ProviderConfigReference: &xpv2.ProviderConfigReference{Kind: kindProviderConfig, Name: in.ProviderConfigName()},
			},
			ForProvider: *p.DeepCopy(),
		},
	}
	q.SetAnnotations(map[string]string{annotationExternalName: name})
	return q
}

// queues composes spec.queues once the server runs (or once they exist):
// the credentials provider-armada uses, its ProviderConfig and a Queue per
// entry. Queues do not hold the Armada's readiness (Armada serves without
// them); the QueuesReady condition reports them instead.
func (r *renderer) queues(password string) {
	in := r.in
	if len(in.Spec.Queues) == 0 && !r.exists(keyProviderConfig) {
		return
	}
	if !r.opt.Observed.Workloads["server"].Ready && !r.exists(keyProviderConfig) {
		r.out.Conditions = append(r.out.Conditions, Condition{Type: ConditionQueues, Reason: ReasonWaiting, Message: "Waiting for the server before creating queues"})
		return
	}
	r.add(keyQueueCreds, in.queueCredentials(password), r.exists(keyQueueCreds))
	r.add(keyProviderConfig, in.providerConfig(), r.exists(keyProviderConfig))
	var waiting []string
	for _, q := range in.Spec.Queues {
		key := keyQueuePrefix + q.Name
		queue := in.Queue(q.Name, q.QueueParameters, "queue")
		// The platform's queues follow spec.deletionPolicy: under Orphan
		// deleting the claim leaves them in Armada (and its database).
		for _, p := range in.managementPolicies() {
			a, _ := p.(string)
			queue.Spec.ManagementPolicies = append(queue.Spec.ManagementPolicies, xpv2.ManagementAction(a))
		}
		r.add(key, queue, true)
		if !r.opt.Observed.Ready[key] {
			waiting = append(waiting, q.Name)
		}
	}
	if len(waiting) > 0 {
		r.out.Conditions = append(r.out.Conditions, Condition{
			Type: ConditionQueues, Reason: ReasonWaiting,
			Message: "Waiting for provider-armada to create queues: " + strings.Join(waiting, ", "),
		})
		return
	}
	r.out.Conditions = append(r.out.Conditions, Condition{Type: ConditionQueues, Status: true, Reason: ReasonReady, Message: "Every queue exists in Armada"})
}
