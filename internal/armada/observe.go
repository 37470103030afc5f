package armada

import (
	"encoding/base64"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// Observed is what the function has seen of the composed resources. A
// missing observation never removes anything: it only means "not known yet".
type Observed struct {
	// Passwords already stored in the credentials Secret, by user.
	Passwords map[string]string
	// TLS is the data of the TLS Secret, by key.
	TLS map[string][]byte
	// CertRevisions are the status.revision of the observed cert-manager
	// Certificates, by composition resource name; nil if none.
	CertRevisions map[string]int64
	// Jobs are the migration Jobs seen, by object name.
	Jobs map[string]JobState
	// Workloads are the component workloads seen, by instance name.
	Workloads map[string]Workload
	// Keys are the composition resource names observed.
	Keys map[string]bool
	// Ready reports, by composition resource name, whether an observed
	// resource is ready: a managed resource or Object whose Ready
	// condition is True, a CloudNativePG Database applied, a workload
	// available or a Job complete.
	Ready map[string]bool
	// Modes are the backing-service modes the XR's status reported, by
	// service (postgres, redis, pulsar).
	Modes map[string]string
	// Policies are the deletion policies the XR's status reported each
	// backing service's stateful resources composed with, by service.
	Policies map[string]string
	// ModeChanges are the modes the XR's status reported allowModeChange
	// allowed a switch to, by service.
	ModeChanges map[string]string
	// PasswordGenerations are the rotation generations the observed
	// credentials Secret records, by password key; CAGeneration the one
	// the TLS Secret records for the CA.
	PasswordGenerations map[string]int32
	CAGeneration        int32
	// DeletesData reports, by composition resource name of an observed
	// stateful resource, whether deleting it as observed deletes its data.
	DeletesData map[string]bool
	// Unsynced are the messages of observed managed resources whose Synced
	// condition is False, by composition resource name: for a
	// provider-kubernetes Object, why it cannot reach its cluster.
	Unsynced map[string]string
	// Created are the observed managed resources crossplane-runtime
	// recorded as having created their external resource (its
	// external-create-succeeded annotation), by composition resource name:
	// a provider-kubernetes Object's object exists in its cluster.
	Created map[string]bool
	// StatusVersions are the versions the XR's status last reported
	// (status.version.desired and running), empty when not reported: a
	// version change is seen even when no workload is observed.
	StatusVersions []string
	// StatusBackup is the pre-upgrade Backup the XR's status last
	// reported (status.backup.lastBackup.name): it stays composed while
	// its own observation is missing.
	StatusBackup string
	// Backups are the observed CloudNativePG Backups, by object name.
	Backups map[string]BackupObserved
	// RecoveryWindows are the recovery windows the observed Barman Cloud
	// ObjectStores report, by server (cluster) name.
	RecoveryWindows map[string]RecoveryWindow
	// ConfigHashes are the hashes of the observed component config
	// Secrets' configs, by composition resource name (<instance>-config).
	ConfigHashes map[string]string
	// RemoteSecrets are the Secrets the containers of a worker cluster's
	// workload read env from, as its Object composes it, by instance
	// name.
	RemoteSecrets map[string][]string
	// Deletable reports, by composition resource name of an observed
	// provider-kubernetes Object, whether deleting it deletes the remote
	// object (its management policies allow Delete).
	Deletable map[string]bool
	// SQLProviderConfig is the spec of the observed provider-sql
	// ProviderConfig, kept while its Databases are observed (see
	// renderer.postgres); nil if none is observed.
	SQLProviderConfig map[string]any
	// SQLDatabasesLeft reports whether a provider-sql Database naming the
	// install's ProviderConfig still exists though it is no longer
	// observed (see Install.LeavingSQLDatabases), or whether that is not
	// known yet.
	SQLDatabasesLeft bool
	// Pruners are the observed database pruner CronJobs, by composition
	// resource name (pruning.go); nil if none.
	Pruners map[string]PrunerObserved
	// Drill is the observed restore drill CronJob (drill.go); nil if
	// none.
	Drill *DrillObserved
}

// BackupObserved is an observed CloudNativePG Backup.
type BackupObserved struct {
	// Phase is its status.phase, empty until CloudNativePG sets it.
	Phase string
	// Time is its status.stoppedAt, or startedAt while it runs.
	Time string
}

// RecoveryWindow is one server's status.serverRecoveryWindow entry of a
// Barman Cloud ObjectStore.
type RecoveryWindow struct {
	FirstRecoverabilityPoint, LastSuccessful, LastFailed string
}

// observedPrefix reports whether a composition resource name with prefix
// is observed.
func (o Observed) observedPrefix(prefix string) bool {
	for k := range o.Keys {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// WithServices returns o with what the XR's status reported of its backing
// services: their modes, deletion policies and allowed mode changes.
func (o Observed) WithServices(services map[string]v1alpha1.BackingServiceStatus) Observed {
	o.Modes, o.Policies, o.ModeChanges = map[string]string{}, map[string]string{}, map[string]string{}
	for name, st := range services {
		o.Modes[name], o.Policies[name], o.ModeChanges[name] = st.Mode, st.DeletionPolicy, st.ModeChangedTo
	}
	return o
}

// WithStatus returns o with what the XR's status reported: the versions
// and the pre-upgrade Backup.
func (o Observed) WithStatus(backup string, versions ...string) Observed {
	o.StatusBackup = backup
	o.StatusVersions = nil
	for _, v := range versions {
		if v != "" {
			o.StatusVersions = append(o.StatusVersions, v)
		}
	}
	return o
}

// WithSQLDatabasesLeft returns o with whether provider-sql Databases a
// mode switch took out of desired state still exist (see
// Install.LeavingSQLDatabases).
func (o Observed) WithSQLDatabasesLeft(left bool) Observed {
	o.SQLDatabasesLeft = left
	return o
}

// JobState is a Job's outcome.
type JobState int

// Job outcomes.
const (
	JobRunning JobState = iota
	JobComplete
	JobFailed
	// JobNotCreated is a Job not composed yet: it waits for its inputs.
	JobNotCreated
)

// Workload is an observed Deployment or StatefulSet.
type Workload struct {
	// Version is the Armada version its pod template runs.
	Version string
	// Ready is true when every desired replica is updated and ready.
	Ready bool
	// ConfigHash is its pod template's config-hash annotation.
	ConfigHash string
	// Restart is its pod template's restart annotation (actions.go).
	Restart string
}

// Observe extracts what rendering needs from observed composed resources,
// keyed by composition resource name.
func Observe(resources map[string]*unstructured.Unstructured) Observed {
	o := Observed{
		Passwords: map[string]string{}, TLS: map[string][]byte{}, Jobs: map[string]JobState{}, Workloads: map[string]Workload{},
		Keys: map[string]bool{}, Ready: map[string]bool{}, Unsynced: map[string]string{}, Created: map[string]bool{}, DeletesData: map[string]bool{},
		Backups: map[string]BackupObserved{}, RecoveryWindows: map[string]RecoveryWindow{}, ConfigHashes: map[string]string{},
	}
	for key, u := range resources {
		if u == nil {
			continue
		}
		o.Keys[key] = true
		o.Ready[key] = ready(u)
		if status, msg := condition(u, "Synced"); status == "False" {
			o.Unsynced[key] = msg
		}
		if u.GetAnnotations()[annotationCreateSucceeded] != "" {
			o.Created[key] = true
		}
		if IsStateful(key) {
			o.DeletesData[key] = deletesData(u)
		}
		if u.GetAPIVersion() == apiK8sObject && u.GetKind() == "Object" {
			observeObject(&o, key, u)
			// A remote object: what matters is the object in its cluster.
			m, found, _ := unstructured.NestedMap(u.Object, "status", "atProvider", "manifest")
			if !found {
				continue
			}
			u = &unstructured.Unstructured{Object: m}
		}
		observeContent(&o, key, u)
	}
	return o
}

// observeContent records what one observed object (the manifest of a
// remote Object) holds that rendering reads back into o.
func observeContent(o *Observed, key string, u *unstructured.Unstructured) {
	switch {
	case key == keyPostgresSQLPC:
		if spec, ok, _ := unstructured.NestedMap(u.Object, "spec"); ok {
			o.SQLProviderConfig = spec
		}
	case key == keyCredentials:
		for user, b := range secretData(u) {
			o.Passwords[user] = string(b)
		}
		o.PasswordGenerations = observedGenerations(u.GetAnnotations())
	case key == keyTLS:
		o.TLS = secretData(u)
		o.CAGeneration = observedGenerations(u.GetAnnotations())[rotationCA]
	case u.GetAPIVersion() == apiCertManager && u.GetKind() == kindCertificate:
		if rev, ok := number(u.Object, "status", "revision"); ok {
			if o.CertRevisions == nil {
				o.CertRevisions = map[string]int64{}
			}
			o.CertRevisions[key] = rev
		}
	case u.GetAPIVersion() == apiCNPG && u.GetKind() == "Backup":
		o.Backups[u.GetName()] = backupObserved(u)
	case key == keyDrillCronJob:
		observeDrill(o, u)
	case u.GetKind() == "CronJob":
		observePruner(o, key, u)
	case u.GetAPIVersion() == apiBarmanCloud && u.GetKind() == "ObjectStore":
		recoveryWindows(u, o.RecoveryWindows)
	case u.GetKind() == "Job":
		o.Jobs[u.GetName()] = jobState(u)
	case u.GetKind() == kindSecret && strings.HasSuffix(key, "-config"):
		if cfg, ok := secretData(u)[configKey]; ok {
			o.ConfigHashes[key] = configHash(cfg)
		}
	case strings.HasSuffix(key, keyWorkloadSuffix):
		o.Workloads[strings.TrimSuffix(key, keyWorkloadSuffix)] = workload(u)
	}
}

// observeObject records what identity rotation reads of a
// provider-kubernetes Object: whether dropping it deletes the remote
// object and, for a workload, the Secrets its containers read.
func observeObject(o *Observed, key string, u *unstructured.Unstructured) {
	policies, found, _ := unstructured.NestedStringSlice(u.Object, "spec", "managementPolicies")
	if o.Deletable == nil {
		o.Deletable = map[string]bool{}
	}
	o.Deletable[key] = !found || slices.Contains(policies, "*") || slices.Contains(policies, "Delete")
	if !strings.HasSuffix(key, keyWorkloadSuffix) {
		return
	}
	// The workload in its cluster, or as composed until it is seen there.
	containers, found, _ := unstructured.NestedSlice(u.Object, "status", "atProvider", "manifest", "spec", "template", "spec", "containers")
	if !found {
		containers, _, _ = unstructured.NestedSlice(u.Object, "spec", "forProvider", "manifest", "spec", "template", "spec", "containers")
	}
	var secrets []string
	for _, c := range containers {
		env, _, _ := unstructured.NestedSlice(asMap(c), "env")
		for _, e := range env {
			if name, ok, _ := unstructured.NestedString(asMap(e), "valueFrom", "secretKeyRef", "name"); ok && !slices.Contains(secrets, name) {
				secrets = append(secrets, name)
			}
		}
	}
	if o.RemoteSecrets == nil {
		o.RemoteSecrets = map[string][]string{}
	}
	o.RemoteSecrets[strings.TrimSuffix(key, keyWorkloadSuffix)] = secrets
}

// asMap is v as a JSON object, or nil.
func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// backupObserved is a CloudNativePG Backup's phase and time.
func backupObserved(u *unstructured.Unstructured) BackupObserved {
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	t, _, _ := unstructured.NestedString(u.Object, "status", "stoppedAt")
	if t == "" {
		t, _, _ = unstructured.NestedString(u.Object, "status", "startedAt")
	}
	return BackupObserved{Phase: phase, Time: t}
}

// recoveryWindows adds a Barman Cloud ObjectStore's recovery windows to
// out, by server name.
func recoveryWindows(u *unstructured.Unstructured, out map[string]RecoveryWindow) {
	windows, _, _ := unstructured.NestedMap(u.Object, "status", "serverRecoveryWindow")
	for server, w := range windows {
		m, _ := w.(map[string]any)
		str := func(k string) string { s, _ := m[k].(string); return s }
		out[server] = RecoveryWindow{
			FirstRecoverabilityPoint: str("firstRecoverabilityPoint"), LastSuccessful: str("lastSuccessfulBackupTime"), LastFailed: str("lastFailedBackupTime"),
		}
	}
}

// secretData is an observed Secret's non-empty values, decoded.
func secretData(u *unstructured.Unstructured) map[string][]byte {
	out := map[string][]byte{}
	data, _, _ := unstructured.NestedStringMap(u.Object, "data")
	for k, v := range data {
		if b, err := base64.StdEncoding.DecodeString(v); err == nil && len(b) > 0 {
			out[k] = b
		}
	}
	return out
}

// condition is a condition's status and message.
func condition(u *unstructured.Unstructured, typ string) (status, message string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			status, _ = m["status"].(string)
			message, _ = m["message"].(string)
			return status, message
		}
	}
	return "", ""
}

// ready is whether an observed resource is ready, by its kind.
func ready(u *unstructured.Unstructured) bool {
	switch {
	case u.GetKind() == "Job":
		return jobState(u) == JobComplete
	case u.GetKind() == "Deployment" || u.GetKind() == kindStatefulSet:
		return workload(u).Ready
	case u.GetAPIVersion() == apiCNPG && u.GetKind() == kindDatabase:
		applied, _, _ := unstructured.NestedBool(u.Object, "status", "applied")
		return applied
	case u.GetAPIVersion() == apiCNPG && u.GetKind() == "ScheduledBackup":
		// It reports no condition, only schedule times: it is ready once
		// it exists. The backups it takes are reported in status.backup.
		return true
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			return m["status"] == "True"
		}
	}
	return false
}

func jobState(u *unstructured.Unstructured) JobState {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["status"] != "True" {
			continue
		}
		switch m["type"] {
		case "Complete":
			return JobComplete
		case "Failed":
			return JobFailed
		}
	}
	if n, _ := number(u.Object, "status", "succeeded"); n > 0 {
		return JobComplete
	}
	return JobRunning
}

func workload(u *unstructured.Unstructured) Workload {
	version, _, _ := unstructured.NestedString(u.Object, "spec", "template", "metadata", "labels", labelVersion)
	want, found := number(u.Object, "spec", "replicas")
	if !found {
		want = 1
	}
	ready, _ := number(u.Object, "status", "readyReplicas")
	updated, _ := number(u.Object, "status", "updatedReplicas")
	observedGen, _ := number(u.Object, "status", "observedGeneration")
	hash, _, _ := unstructured.NestedString(u.Object, "spec", "template", "metadata", "annotations", annotationConfigHash)
	restart, _, _ := unstructured.NestedString(u.Object, "spec", "template", "metadata", "annotations", annotationRestart)
	return Workload{Version: version, Ready: ready >= want && updated >= want && observedGen >= u.GetGeneration(), ConfigHash: hash, Restart: restart}
}

// number reads an integer field. Observed resources arrive through
// protobuf Structs, where every number is a float64.
func number(obj map[string]any, fields ...string) (int64, bool) {
	v, found, err := unstructured.NestedFieldNoCopy(obj, fields...)
	if !found || err != nil {
		return 0, false
	}
	switch n := v.(type) {
	case int64:
		return n, true
	case float64:
		return int64(n), true
	case int:
		return int64(n), true
	}
	return 0, false
}
