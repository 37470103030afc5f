package armada

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The admission policy on the executor's pods. Armada lets whoever may
// submit to a queue choose a job's namespace, service account, volumes and
// labels, and the executor creates the pod as asked, with its own rights.
// So each Armada composes a ValidatingAdmissionPolicy and its binding, in
// this cluster and in each worker cluster with an executor, that admits a
// pod its executors create (or update) only
//   - job-namespace: in a job namespace annotated for this Armada whose
//     queues list the pod's queue (the armada_queue_id label, which the
//     executor sets over any label the job asks for);
//   - service-account: as the namespace's default ServiceAccount;
//   - service-account-token: with no service account token mounted;
//   - composed-secrets: with no volume naming a Secret the Armada composes;
//   - component-labels: without the labels the Armada's Services select.
// Each refusal is a Forbidden answer whose message names its rule: Armada's
// executor reports a Forbidden or Invalid pod creation as the job's
// failure, with that message as its reason (submit.go isRecoverable in
// Armada's executor), so the job fails at once and says why.

const (
	// apiVersionAdmission is the admission policies' apiVersion.
	apiVersionAdmission = "admissionregistration.k8s.io/v1"
	// keyAdmissionPolicy and keyAdmissionBinding are the policy's and
	// its binding's composition resource names.
	keyAdmissionPolicy  = "jobs-admissionpolicy"
	keyAdmissionBinding = "jobs-admissionpolicybinding"
	// labelQueue is the label Armada's executor puts on a job's pod naming
	// its queue (internal/executor/domain.Queue).
	labelQueue = "armada_queue_id"
)

// The rules, as their messages name them.
const (
	RuleJobNamespace        = "job-namespace"
	RuleServiceAccount      = "service-account"
	RuleServiceAccountToken = "service-account-token"
	RuleComposedSecrets     = "composed-secrets"
	RuleComponentLabels     = "component-labels"
)

// AdmissionPolicyName names the Armada's admission policy and its binding,
// cluster-wide: a DNS subdomain unique to the Armada.
func (in *Install) AdmissionPolicyName() string {
	return in.Name + "." + in.Namespace + ".jobs.armadaproject.io"
}

// executorUsers are the usernames the Kubernetes API knows the executors
// of cluster c by (nil: this cluster's), sorted.
func (in *Install) executorUsers(c *clusterRef) []string {
	var users []string
	for _, inst := range instances(in) {
		if inst.Executor == nil {
			continue
		}
		rc := remoteCluster(inst.Executor)
		if (rc == nil) != (c == nil) || rc != nil && *rc != *c {
			continue
		}
		users = append(users, "system:serviceaccount:"+in.Namespace+":"+in.object(inst.Name))
	}
	slices.Sort(users)
	return users
}

// celList is a CEL list literal of strings.
func celList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// ruleMessage is a rule's refusal message.
func ruleMessage(rule, why string) string {
	return "rule " + rule + ": " + why
}

// admissionPolicy is the Armada's policy on the pods of the executors
// users names.
func (in *Install) admissionPolicy(users []string) *admissionv1.ValidatingAdmissionPolicy {
	ref := in.ArmadaRef()
	secrets := slices.Sorted(maps.Keys(in.composedSecrets()))
	sel := in.selector("")
	forbidden := ptr.To(metav1.StatusReasonForbidden)
	has := func(m, k string) string { return "has(" + m + ") && " + strconv.Quote(k) + " in " + m }
	annotations, labels := "namespaceObject.metadata.annotations", "object.metadata.labels"
	noToken := "!(has(object.spec.automountServiceAccountToken) && object.spec.automountServiceAccountToken) && " +
		"(!has(object.spec.volumes) || !object.spec.volumes.exists(v, has(v.projected) && has(v.projected.sources) && " +
		"v.projected.sources.exists(s, has(s.serviceAccountToken))))"
	noSecrets := "!has(object.spec.volumes) || !object.spec.volumes.exists(v, " +
		"(has(v.secret) && has(v.secret.secretName) && v.secret.secretName in variables.secrets) || " +
		"(has(v.projected) && has(v.projected.sources) && v.projected.sources.exists(s, has(s.secret) && has(s.secret.name) && s.secret.name in variables.secrets)))"
	noLabels := fmt.Sprintf("!(%s && %s[%q] == %q && %s && %s[%q] == %q)",
		has(labels, labelName), labels, labelName, sel[labelName], has(labels, labelInstance), labels, labelInstance, sel[labelInstance])
	return &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta: metav1.TypeMeta{APIVersion: apiVersionAdmission, Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{
			Name: in.AdmissionPolicyName(), Labels: in.labels("executor"), Annotations: in.owner.annotations(),
		},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{
				ResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				}}},
			},
			MatchConditions: []admissionv1.MatchCondition{{
				Name:       "armada-executor",
				Expression: "request.userInfo.username in " + celList(users),
			}},
			Variables: []admissionv1.Variable{
				{Name: "armada", Expression: fmt.Sprintf("%s ? %s[%q] : ''", has(annotations, AnnotationArmada), annotations, AnnotationArmada)},
				{Name: "queues", Expression: fmt.Sprintf("%s ? %s[%q].split(',') : ['']", has(annotations, AnnotationQueues), annotations, AnnotationQueues)},
				{Name: "queue", Expression: fmt.Sprintf("%s ? %s[%q] : ''", has(labels, labelQueue), labels, labelQueue)},
				{Name: "secrets", Expression: celList(secrets)},
			},
			Validations: []admissionv1.Validation{
				{
					Expression: fmt.Sprintf("variables.armada == %q && variables.queue != '' && variables.queue in variables.queues", ref),
					Reason:     forbidden,
					Message: ruleMessage(RuleJobNamespace, fmt.Sprintf("Armada %s runs a job only in a job namespace of its queue "+
						"(the claim's spec.jobNamespaces for its spec.queues, a team queue's spec.namespaces for that queue); submit it with one as its namespace", ref)),
					MessageExpression: fmt.Sprintf("%q + request.namespace + %q + (variables.queue == '' ? '(none)' : variables.queue) + %q",
						"rule "+RuleJobNamespace+": namespace ",
						" is not a job namespace of queue ", fmt.Sprintf(" on Armada %s (the claim's spec.jobNamespaces for its spec.queues, "+
							"a team queue's spec.namespaces for that queue); submit the job with one as its namespace", ref)),
				},
				{
					Expression: "(!has(object.spec.serviceAccountName) || object.spec.serviceAccountName in ['', 'default']) && " +
						"(!has(object.spec.serviceAccount) || object.spec.serviceAccount in ['', 'default'])",
					Reason:  forbidden,
					Message: ruleMessage(RuleServiceAccount, "a job runs as its namespace's default ServiceAccount; remove serviceAccountName from the job's podSpec"),
				},
				{
					Expression: noToken,
					Reason:     forbidden,
					Message: ruleMessage(RuleServiceAccountToken, "a job mounts no service account token; remove automountServiceAccountToken: true "+
						"and any serviceAccountToken volume from the job's podSpec"),
				},
				{
					Expression: noSecrets,
					Reason:     forbidden,
					Message: ruleMessage(RuleComposedSecrets, fmt.Sprintf("a job mounts no Secret Armada %s composes (%s); mount a Secret of your own",
						ref, strings.Join(secrets, ", "))),
				},
				{
					Expression: noLabels,
					Reason:     forbidden,
					Message: ruleMessage(RuleComponentLabels, fmt.Sprintf("a job carries no label pair %s=%s, %s=%s of Armada %s's components; remove them from the job",
						labelName, sel[labelName], labelInstance, sel[labelInstance], ref)),
				},
			},
		},
	}
}

// admissionBinding binds the Armada's policy, denying what it refuses.
func (in *Install) admissionBinding() *admissionv1.ValidatingAdmissionPolicyBinding {
	return &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta: metav1.TypeMeta{APIVersion: apiVersionAdmission, Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{
			Name: in.AdmissionPolicyName(), Labels: in.labels("executor"), Annotations: in.owner.annotations(),
		},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        in.AdmissionPolicyName(),
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
}

// admissionPolicies composes the policy and its binding in each cluster
// with an executor: this one through addClusterScoped, a worker cluster's
// wrapped in Objects.
func (r *renderer) admissionPolicies() {
	in := r.in
	if in.hasLocalExecutor() {
		r.addClusterScoped(nil, keyAdmissionPolicy, in.admissionPolicy(in.executorUsers(nil)), r.exists(keyAdmissionPolicy))
		r.addClusterScoped(nil, keyAdmissionBinding, in.admissionBinding(), r.exists(keyAdmissionBinding))
	}
	for _, c := range in.remoteClusters() {
		to := &c
		p := c.keyPrefix()
		r.addTo(to, p+keyAdmissionPolicy, in.admissionPolicy(in.executorUsers(to)), false)
		r.addTo(to, p+keyAdmissionBinding, in.admissionBinding(), false)
	}
}
