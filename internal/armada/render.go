package armada

import (
	"fmt"
	"sort"
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

// Condition types and reasons the XR reports. They are stable: users and
// tooling may match on them.
const (
	ConditionBackingServices = "BackingServicesReady"
	ConditionQueues          = "QueuesReady"
	ConditionMigrations      = "MigrationsComplete"
	ConditionComponents      = "ComponentsReady"

	ReasonComplete            = "Complete"
	ReasonRunning             = "Running"
	ReasonFailed              = "Failed"
	ReasonAllReady            = "AllReady"
	ReasonWaitingForMigration = "WaitingForMigration"
	ReasonUnavailable         = "Unavailable"
	ReasonReady               = "Ready"
	ReasonWaiting             = "Waiting"
	ReasonWaitingForDatabases = "WaitingForDatabases"
	ReasonWaitingForBackup    = "WaitingForBackup"
	ReasonBackupFailed        = "BackupFailed"
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

// Condition is a condition for the XR and its claim.
type Condition struct {
	Type    string
	Status  bool
	Reason  string
	Message string
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

// add composes an object in this cluster.
func (r *renderer) add(key string, o client.Object, ready bool) {
	r.addTo(nil, key, o, ready)
}

// addTo composes an object where to says: in this cluster if to is nil,
// else wrapped in a provider-kubernetes Object for the cluster to names
// (a worker cluster, or the cluster-scope config of a namespaced XR),
// ready when the Object is.
func (r *renderer) addTo(to *clusterRef, key string, o client.Object, ready bool) {
	r.addWith(to, key, o, remoteOptions{}, ready)
}

// addWith is addTo with what a wrapping Object adds around its manifest.
func (r *renderer) addWith(to *clusterRef, key string, o client.Object, opt remoteOptions, ready bool) {
	if to != nil {
		o, ready = r.in.remoteObject(key, *to, o, opt), r.opt.Observed.Ready[key]
	}
	r.out.Objects = append(r.out.Objects, Object{Key: key, Object: o, Ready: ready})
}

// exists is add's readiness for objects that are ready once they exist.
func (r *renderer) exists(key string) bool { return r.opt.Observed.Keys[key] }

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
	r.cluster()
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

// checkDowngrade refuses to render an older version than a running one.
func checkDowngrade(in *Install, o Observed) error {
	names := make([]string, 0, len(o.Workloads))
	for name := range o.Workloads {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if v := o.Workloads[name].Version; v != "" && compareVersions(in.Spec.Version, v) < 0 {
			return errors.Errorf("spec.version: Forbidden: cannot downgrade Armada from %s to %s (%s runs %s); set spec.version to %s or newer",
				v, in.Spec.Version, name, v, v)
		}
	}
	return nil
}

// credentials composes the Secret of generated passwords, reusing every
// password already observed at its desired generation (spec.rotation) so
// they stay stable across reconciles.
func (r *renderer) credentials() error {
	passwords, gens := map[string]string{}, map[string]int32{}
	for _, key := range r.in.passwordKeys() {
		gen, had := r.in.passwordGeneration(key), r.opt.Observed.PasswordGenerations[key]
		gens[key] = gen
		if gen < had {
			return errors.Errorf("spec.rotation.passwords.%s: Invalid value: %d: the credentials Secret holds generation %d; generations only go up", key, gen, had)
		}
		if p, ok := r.opt.Observed.Passwords[key]; ok && gen == had {
			passwords[key] = p
			continue
		}
		if r.opt.Rand == nil {
			return errors.New("cannot generate passwords: no random source configured")
		}
		p, err := generatePassword(rotated(r.opt.Rand, key, gen))
		if err != nil {
			return errors.Wrapf(err, "cannot generate password %q", key)
		}
		passwords[key] = p
	}
	r.passwords = passwords
	secret := r.in.credentials(passwords)
	secret.Annotations = generationAnnotations(gens)
	r.add(keyCredentials, secret, r.exists(keyCredentials))
	return nil
}

// migrations composes the migration Jobs of the desired version, once the
// databases exist and no pre-upgrade Backup holds them, and reports which
// migrations are complete. A Job already created stays composed whatever
// the databases' and the Backup's observed state.
func (r *renderer) migrations(g gates, hold backupHold) (map[string]JobState, error) {
	done := map[string]JobState{}
	v := r.in.Spec.Version
	for _, m := range migrations {
		secret, hash, err := r.in.configSecret(&r.yaml, r.in.object("migrate-"+m.Name+"-config"), "migrate-"+m.Name, migrationConfig(r.in, m))
		if err != nil {
			return nil, err
		}
		r.add("migrate-"+m.Name+"-config", secret, r.exists("migrate-"+m.Name+"-config"))
		job, key, err := r.in.migrationJob(m, v, secret.Name, hash)
		if err != nil {
			return nil, err
		}
		state, seen := r.opt.Observed.Jobs[job.Name]
		if !seen && (!g.Postgres || hold.Reason != "") {
			if g.Postgres {
				r.held = hold
			}
			done[m.Name] = JobNotCreated
			continue
		}
		done[m.Name] = state
		r.add(key, job, state == JobComplete)
	}
	return done, nil
}

// instance composes one component instance. Its workload runs the desired
// version once the component's migration is complete; until then a running
// workload keeps its version and a new one is not created yet.
func (r *renderer) instance(inst *instance, g gates, migrated map[string]JobState) error {
	in, name := r.in, inst.Name
	// A remote executor's objects go to its worker cluster.
	to := remoteCluster(inst.Executor)
	id := r.remoteExecutor(inst, to)
	cfg, err := in.componentConfig(inst)
	if err != nil {
		return errors.Wrapf(err, "cannot compose the %s config", name)
	}
	secret, hash, err := in.configSecret(&r.yaml, in.object(name+"-config"), name, cfg)
	if err != nil {
		return err
	}
	r.addTo(to, name+"-config", secret, r.exists(name+"-config"))
	r.addTo(to, name+"-serviceaccount", in.serviceAccount(name, inst.component), r.exists(name+"-serviceaccount"))
	// Every instance has a Service, if only for its metrics port.
	r.addTo(to, name+"-service", in.service(name, in.object(name), inst.component, false), r.exists(name+"-service"))
	if !inst.PerExecutor {
		r.addTo(to, name+"-pdb", in.podDisruptionBudget(name), r.exists(name+"-pdb"))
	}
	replicas := inst.replicas()
	if inst.LeaderElected {
		r.addTo(to, name+"-headless", in.service(name, in.object(name+"-headless"), inst.component, true), r.exists(name+"-headless"))
		if replicas > 1 {
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

	observed, running := r.opt.Observed.Workloads[name]
	version, reason := in.Spec.Version, g.waitingFor(inst)
	if reason == "" {
		reason = r.certificateWaiting(inst)
	}
	if reason == "" && inst.Migration != "" && migrated[inst.Migration] != JobComplete {
		reason = fmt.Sprintf("Waiting for the %s migration of Armada %s", inst.Migration, in.Spec.Version)
	}
	if reason != "" {
		if !running {
			r.out.Status.Components[name] = v1alpha1.ComponentStatus{Reason: reason}
			if inst.Executor != nil {
				r.out.Status.Executors = append(r.out.Status.Executors, r.remoteStatus(name, inst.Executor, r.out.Status.Components[name]))
			}
			return nil
		}
		version = observed.Version
	}
	// The template carries the hash of the config Secret as observed once
	// it exists, not as desired: Crossplane applies the Secret and the
	// workload in one pass in no set order, and a template that changed
	// first would restart pods on the old config, with nothing to restart
	// them when the Secret changes after. The pass that observes the new
	// Secret changes the hash and rolls the pods.
	if h, ok := r.opt.Observed.ConfigHashes[name+"-config"]; ok {
		hash = h
	}
	env, vols, mounts, hash := r.podExtras(inst, id, hash)
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
		ConfigSecret: secret.Name,
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
	ready := running && observed.Ready && observed.Version == version
	if reason == "" && !ready {
		reason = "Waiting for the workload to become available"
	}
	if inst.LeaderElected {
		r.addTo(to, name+keyWorkloadSuffix, in.statefulSet(name, replicas, tpl), ready)
	} else {
		r.addTo(to, name+keyWorkloadSuffix, in.deployment(name, replicas, tpl), ready)
	}
	r.out.Status.Components[name] = v1alpha1.ComponentStatus{Ready: ready && version == in.Spec.Version, Version: version, Reason: reason}
	if inst.Executor != nil {
		r.out.Status.Executors = append(r.out.Status.Executors, r.remoteStatus(name, inst.Executor, r.out.Status.Components[name]))
	}
	return nil
}

// cluster composes the cluster-scoped priority classes (through
// provider-kubernetes for a namespaced XR) and the Ingresses. The
// ClusterRoles of components with cluster rules are fixed (rbac.go); each
// instance composes its own binding.
func (r *renderer) cluster() {
	in := r.in
	for _, pc := range in.Spec.Scheduling.PriorityClasses {
		key := "priorityclass-" + pc.Name
		r.addClusterScoped(nil, key, in.priorityClass(pc.Name, pc.Priority, pc.Preemptible), r.exists(key))
	}
	for _, i := range in.ingressRoutes() {
		key := "ingress-" + i.suffix
		r.add(key, in.ingress("ingress-"+i.suffix, i.host, i.component, i.port, i.grpc), r.exists(key))
	}
}

// An ingressRoute is one host of spec.ingress and the component port it
// routes to.
type ingressRoute struct {
	suffix, host, component, port string
	grpc                          bool
}

// ingressRoutes are the Ingresses spec.ingress asks for: one per host set.
func (in *Install) ingressRoutes() []ingressRoute {
	ing := in.Spec.Ingress
	if ing == nil {
		return nil
	}
	var out []ingressRoute
	for _, i := range []ingressRoute{
		{"grpc", ing.GRPCHost, "server", "grpc", true},
		{"rest", ing.RESTHost, "server", "http", false},
		{"lookout", ing.LookoutHost, dbLookout, "http", false},
		{"executor-api", ing.ExecutorAPIHost, dbScheduler, "grpc", true},
	} {
		if i.host != "" {
			out = append(out, i)
		}
	}
	return out
}

// conditions summarise migrations and components, with stable reasons and
// messages that list what is pending in a stable order.
func (r *renderer) conditions(migrated map[string]JobState) {
	var running, failed, pending []string
	for _, m := range migrations {
		switch migrated[m.Name] {
		case JobRunning:
			running = append(running, m.Name)
		case JobFailed:
			failed = append(failed, m.Name)
		case JobNotCreated:
			pending = append(pending, m.Name)
		case JobComplete:
		}
	}
	v := r.in.Spec.Version
	switch {
	case len(pending) > 0 && r.held.Reason != "":
		r.out.Conditions = append(r.out.Conditions, Condition{Type: ConditionMigrations, Reason: r.held.Reason, Message: r.held.Message})
	case len(pending) > 0:
		r.out.Conditions = append(r.out.Conditions, Condition{
			Type: ConditionMigrations, Reason: ReasonWaitingForDatabases,
			Message: fmt.Sprintf("Waiting for the PostgreSQL databases before running the %s migration of Armada %s", strings.Join(pending, " and "), v),
		})
	case len(failed) > 0:
		r.out.Conditions = append(r.out.Conditions, Condition{
			Type: ConditionMigrations, Reason: ReasonFailed,
			Message: fmt.Sprintf("Migration Job for %s of Armada %s failed; see the Job's pod logs", strings.Join(failed, " and "), v),
		})
	case len(running) > 0:
		r.out.Conditions = append(r.out.Conditions, Condition{
			Type: ConditionMigrations, Reason: ReasonRunning,
			Message: fmt.Sprintf("Waiting for the %s migration of Armada %s", strings.Join(running, " and "), v),
		})
	default:
		r.out.Conditions = append(r.out.Conditions, Condition{
			Type: ConditionMigrations, Status: true, Reason: ReasonComplete,
			Message: "Migrations of Armada " + v + " are complete",
		})
	}

	names := make([]string, 0, len(r.out.Status.Components))
	for name := range r.out.Status.Components {
		names = append(names, name)
	}
	sort.Strings(names)
	var waiting, unavailable []string
	for _, name := range names {
		s := r.out.Status.Components[name]
		switch {
		case s.Ready:
		case s.Version == "" || s.Version != v:
			waiting = append(waiting, name)
		default:
			unavailable = append(unavailable, name)
		}
	}
	switch {
	case len(waiting) > 0:
		r.out.Conditions = append(r.out.Conditions, Condition{
			Type: ConditionComponents, Reason: ReasonWaitingForMigration,
			Message: "Waiting for migrations before rolling out Armada " + v + " to: " + strings.Join(waiting, ", "),
		})
	case len(unavailable) > 0:
		r.out.Conditions = append(r.out.Conditions, Condition{
			Type: ConditionComponents, Reason: ReasonUnavailable,
			Message: "Not yet available: " + strings.Join(unavailable, ", "),
		})
	default:
		r.out.Conditions = append(r.out.Conditions, Condition{
			Type: ConditionComponents, Status: true, Reason: ReasonAllReady,
			Message: "All components run Armada " + v,
		})
		r.out.Ready = true
		r.out.Status.Version.Running = v
	}
	if !r.out.Ready {
		r.out.Status.Version.Running = runningVersion(r.out.Status.Components)
	}
}

// runningVersion is the version every component runs, or empty while they
// differ or some have not started.
func runningVersion(cs map[string]v1alpha1.ComponentStatus) string {
	v := ""
	for _, s := range cs {
		if !s.Ready && s.Version == "" {
			return ""
		}
		if v != "" && s.Version != v {
			return ""
		}
		v = s.Version
	}
	return v
}

// settingsField is the spec.components field of a component.
func settingsField(component string) string {
	parts := strings.Split(component, "-")
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return strings.Join(parts, "")
}
