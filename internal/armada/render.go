package armada

import (
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/tenancy"
)

// Composition resource names that observation depends on.
const (
	keyCredentials    = "credentials"
	keyWorkloadSuffix = "-workload"
)

// Object is one composed object.
type Object struct {
	// Key is the object's composition resource name.
	Key string
	// Object is the typed object.
	Object client.Object
	// Ready is true when the object is observed and healthy.
	Ready bool
}

// Output is everything rendered for one XArmada.
type Output struct {
	// Objects to compose, in a stable order.
	Objects []Object
	// Status for the XR.
	Status v1alpha1.ArmadaStatus
	// Conditions for the XR and claim.
	Conditions []Condition
	// Ready is true when every component runs the desired version.
	Ready bool
}

// Options are what Render needs beyond the install.
type Options struct {
	// Observed is what is known of the composed resources.
	Observed Observed
	// Rand is the source of generated passwords and TLS keys.
	Rand RandFunc
	// TLSMemo, if set, remembers issued and parsed certificates between
	// renders (see NewTLSMemo); without it every render issues and parses
	// them again, with the same result.
	TLSMemo *TLSMemo
	// Created is the XR's creation time, from which the validity windows
	// of generated certificates are counted; zero for a manifest never
	// created.
	Created time.Time
	// Now is the current time, which picks the validity window a
	// generated certificate must be in and tells an observed one that is
	// expired or near expiry (tlsclock.go). Zero for a render without a
	// clock (a manifest rendered offline): certificates are then those of
	// the first window, leaves valid as long as the CA.
	Now time.Time
	// Tenancy is the ArmadaTenancyPolicy of the claim's tenant, whose
	// spec.jobNamespaces the claim's job namespaces carry (tenancy.Policy's
	// JobNamespace); the zero value is the built-in default.
	Tenancy tenancy.Policy
}

// renderer accumulates one render.
type renderer struct {
	in  *Install
	opt Options
	out Output
	// passwords are the credentials Secret's, by key.
	passwords map[string]string
	// tlsData is the TLS Secret's data, when spec.tls is on.
	tlsData map[string][]byte
	// modeChanges are the modes allowModeChange allowed a switch to, by
	// backing service (see checkModeChanges).
	modeChanges map[string]string
	// held is set when a pre-upgrade Backup holds a migration not started
	// yet.
	held backupHold
	// yaml is the buffer the configs are written through (encodeConfig).
	yaml []byte
}

// Render composes the whole installation.
func Render(in *Install, opt Options) (*Output, error) {
	if err := checkDowngrade(in, opt.Observed); err != nil {
		return nil, err
	}
	if err := checkIdentityGenerations(in, opt.Observed); err != nil {
		return nil, err
	}
	changes, err := checkModeChanges(&in.Spec, opt.Observed)
	if err != nil {
		return nil, err
	}
	// The renderer works on its own copy: Render never changes in.
	in = in.withEstablished(opt.Observed)
	r := &renderer{in: in, opt: opt, modeChanges: changes}
	r.out.Status = v1alpha1.ArmadaStatus{
		Version:           v1alpha1.VersionStatus{Desired: in.Spec.Version},
		Components:        map[string]v1alpha1.ComponentStatus{},
		Endpoints:         in.Endpoints(),
		CredentialsSecret: in.credentialsSecret(),
		Scheduling: v1alpha1.SchedulingStatus{
			PriorityClasses:      in.PriorityClasses(),
			DefaultPriorityClass: in.Spec.Scheduling.DefaultPriorityClass,
		},
	}
	if err := r.credentials(); err != nil {
		return nil, err
	}
	if err := r.tls(); err != nil {
		return nil, err
	}
	g, err := r.backing()
	if err != nil {
		return nil, err
	}
	migrated, err := r.migrations(g, r.pruneHold(r.backups()))
	if err != nil {
		return nil, err
	}
	insts := instances(in)
	for _, inst := range insts {
		if err := r.instance(inst, g, migrated); err != nil {
			return nil, err
		}
	}
	if err := r.pruning(migrated); err != nil {
		return nil, err
	}
	r.actions()
	if err := r.monitoring(insts); err != nil {
		return nil, err
	}
	r.priorityClasses()
	r.ingresses()
	r.jobNamespaces()
	r.admissionPolicies()
	r.networkPolicies(insts)
	r.remoteClusterObjects()
	r.queues(r.passwords[userQueues])
	r.out.Conditions = append(r.out.Conditions, r.backingCondition())
	r.conditions(migrated)
	r.restoreDrill()
	if err := checkDrops(&in.Spec, opt.Observed, r.out.Objects); err != nil {
		return nil, err
	}
	return &r.out, nil
}

// instance composes one component instance: its objects, then its
// workload once nothing gates it, then its status. A remote executor's
// objects go to its worker cluster.
func (r *renderer) instance(inst *instance, g gates, migrated map[string]JobState) error {
	to := remoteCluster(inst.Executor)
	id := r.remoteExecutor(inst, to)
	cfg, err := r.instanceObjects(inst, to)
	if err != nil {
		return err
	}
	status := r.workload(inst, to, id, cfg, r.workloadGate(inst, g, migrated))
	r.componentStatus(inst, status)
	return nil
}

// instanceConfig is the config Secret an instance's pods mount.
type instanceConfig struct {
	// secret is the Secret's name, hash the hash of its desired data.
	secret, hash string
}

// instanceObjects composes an instance's objects other than its workload:
// its config Secret, ServiceAccount, Services, PodDisruptionBudget, lease
// RBAC and component RBAC.
func (r *renderer) instanceObjects(inst *instance, to *clusterRef) (instanceConfig, error) {
	in, name := r.in, inst.Name
	cfg, err := in.componentConfig(inst)
	if err != nil {
		return instanceConfig{}, errors.Wrapf(err, "cannot compose the %s config", name)
	}
	secret, hash, err := in.configSecret(&r.yaml, in.object(name+"-config"), name, cfg)
	if err != nil {
		return instanceConfig{}, err
	}
	r.addTo(to, name+"-config", secret, r.exists(name+"-config"))
	r.addTo(to, name+"-serviceaccount", in.serviceAccount(name, inst.component), r.exists(name+"-serviceaccount"))
	// Every instance has a Service, if only for its metrics port.
	r.addTo(to, name+"-service", in.service(name, in.object(name), inst.component, false), r.exists(name+"-service"))
	if !inst.PerExecutor {
		r.addTo(to, name+"-pdb", in.podDisruptionBudget(name), r.exists(name+"-pdb"))
	}
	if inst.LeaderElected {
		r.addTo(to, name+"-headless", in.service(name, in.object(name+"-headless"), inst.component, true), r.exists(name+"-headless"))
		if inst.replicas() > 1 {
			role, binding := in.leaseRole(name)
			r.addTo(to, name+"-leader-role", role, r.exists(name+"-leader-role"))
			// The binding waits for its Role: Crossplane may not bind the
			// Role, so the API server checks that Crossplane holds the
			// Role's rules, reading the Role, and refuses the binding
			// with NotFound while it does not exist (Crossplane applies
			// a reconcile's objects in no set order).
			if r.exists(name+"-leader-role") || r.exists(name+"-leader-rolebinding") {
				r.addTo(to, name+"-leader-rolebinding", binding, r.exists(name+"-leader-rolebinding"))
			}
		}
	}
	r.instanceRBAC(inst, to)
	return instanceConfig{secret: secret.Name, hash: hash}, nil
}

// A workloadGate is the version an instance's workload runs, and why it
// does not run the desired one yet.
type workloadGate struct {
	// compose is false while the workload waits and is not running yet:
	// a new workload is not created before its gates open.
	compose bool
	// version is the version the workload runs: the desired one once its
	// gates open, until then the one it runs.
	version string
	// reason says what the workload waits for; empty once it runs the
	// desired version.
	reason string
}

// workloadGate gates an instance's workload on its backing services, its
// certificates and its component's migration, in that order. A running
// workload keeps its version while gated; a new one is not created yet.
func (r *renderer) workloadGate(inst *instance, g gates, migrated map[string]JobState) workloadGate {
	reason := g.waitingFor(inst)
	if reason == "" {
		reason = r.certificateWaiting(inst)
	}
	if reason == "" && inst.Migration != "" && migrated[inst.Migration] != JobComplete {
		reason = fmt.Sprintf("Waiting for the %s migration of Armada %s", inst.Migration, r.in.Spec.Version)
	}
	if reason == "" {
		return workloadGate{compose: true, version: r.in.Spec.Version}
	}
	observed, running := r.opt.Observed.Workloads[inst.Name]
	return workloadGate{compose: running, version: observed.Version, reason: reason}
}

// workload composes an instance's Deployment, or StatefulSet for a leader
// elected component, at the version its gate allows, and returns the
// instance's status.
func (r *renderer) workload(inst *instance, to *clusterRef, id *remoteIdentity, cfg instanceConfig, gate workloadGate) v1alpha1.ComponentStatus {
	if !gate.compose {
		return v1alpha1.ComponentStatus{Reason: gate.reason}
	}
	in, name, version := r.in, inst.Name, gate.version
	// The template carries the hash of the config Secret as observed once
	// it exists, not as desired: Crossplane applies the Secret and the
	// workload in one pass in no set order, and a template that changed
	// first would restart pods on the old config, with nothing to restart
	// them when the Secret changes after. The pass that observes the new
	// Secret changes the hash and rolls the pods.
	hash := cfg.hash
	if h, ok := r.opt.Observed.ConfigHashes[name+"-config"]; ok {
		hash = h
	}
	env, vols, mounts, hash := r.podExtras(inst, id, hash)
	replicas := inst.replicas()
	tpl := in.podTemplate(podOptions{
		Component:    inst.component,
		Name:         name,
		Env:          env,
		Identity:     id,
		Volumes:      vols,
		VolumeMounts: mounts,
		Image:        in.image(inst.Image, version, inst.Settings.Image),
		Args:         inst.Args,
		Resources:    resources(inst.Settings.Resources),
		ConfigSecret: cfg.secret,
		ConfigHash:   hash,
		Version:      version,
		Replicas:     replicas,
		LongRunning:  true,
		Settings: &podSettings{
			NodeSelector:              inst.Settings.NodeSelector,
			Tolerations:               inst.Settings.Tolerations,
			Affinity:                  inst.Settings.Affinity,
			TopologySpreadConstraints: inst.Settings.TopologySpreadConstraints,
		},
	})
	in.withRestart(&tpl, name)
	observed, running := r.opt.Observed.Workloads[name]
	ready := running && observed.Ready && observed.Version == version
	if inst.LeaderElected {
		r.addTo(to, name+keyWorkloadSuffix, in.statefulSet(name, replicas, tpl), ready)
	} else {
		r.addTo(to, name+keyWorkloadSuffix, in.deployment(name, replicas, tpl), ready)
	}
	reason := gate.reason
	if reason == "" && !ready {
		reason = "Waiting for the workload to become available"
	}
	return v1alpha1.ComponentStatus{Ready: ready && version == in.Spec.Version, Version: version, Reason: reason}
}

// componentStatus records an instance's status, and a remote executor's
// status beside it.
func (r *renderer) componentStatus(inst *instance, s v1alpha1.ComponentStatus) {
	r.out.Status.Components[inst.Name] = s
	if inst.Executor != nil {
		r.out.Status.Executors = append(r.out.Status.Executors, r.remoteStatus(inst.Name, inst.Executor, s))
	}
}

// settingsField is the spec.components field of a component.
func settingsField(component string) string {
	parts := strings.Split(component, "-")
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return strings.Join(parts, "")
}
