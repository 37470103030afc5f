package armada

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// Operator actions (spec.actions) are declared and idempotent: each runs
// once per token. A restart stamps the tokens that name an instance on its
// pod template, as kubectl rollout restart stamps a time, so the workload
// rolls once per new token and never again while the spec stays; a backup
// composes one CloudNativePG Backup per token. Pausing is Crossplane's own
// crossplane.io/paused annotation on the XR, which stops the XR's
// reconciles (and so this function's) until it is removed.

// Restart keys and annotation.
const (
	// restartAll is the spec.actions.restart key that names every
	// instance.
	restartAll = "all"
	// annotationRestart holds an instance's restart tokens on its pod
	// template.
	annotationRestart = "armadaproject.io/restart"
	// keyBackupNow prefixes the on-demand Backup's composition resource
	// name; it shares the in-cluster PostgreSQL's prefix, so a mode
	// switch sees it as its resource.
	keyBackupNow = "postgres-cnpg-backup-now-"
)

// validateActions checks spec.actions: restart keys name instances, and
// a backup needs the in-cluster PostgreSQL's backups.
func validateActions(p *field.Path, s *v1alpha1.ArmadaSpec) field.ErrorList {
	a := s.Actions
	if a == nil {
		return nil
	}
	var names []string
	for i := range components {
		if !components[i].PerExecutor {
			names = append(names, components[i].Name)
			continue
		}
		for _, e := range s.Executors {
			names = append(names, components[i].Name+"-"+e.ClusterID)
		}
	}
	var errs field.ErrorList
	for _, k := range sortedKeys(a.Restart) {
		if k != restartAll && !slices.Contains(names, k) {
			errs = append(errs, field.NotSupported(p.Child("restart").Key(k), k, append([]string{restartAll}, names...)))
		}
	}
	if a.Backup != "" && (s.Postgres.Mode != modeInCluster || s.Postgres.Backup == nil) {
		errs = append(errs, field.Invalid(p.Child("backup"), a.Backup,
			"backs up the in-cluster PostgreSQL: set spec.postgres.mode InCluster and spec.postgres.backup"))
	}
	return errs
}

// sortedKeys are a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// instanceNames are the names of every instance the install renders.
func (in *Install) instanceNames() []string {
	insts := instances(in)
	out := make([]string, 0, len(insts))
	for _, i := range insts {
		out = append(out, i.Name)
	}
	return out
}

// restartToken is the restart annotation of an instance's pod template:
// the tokens of "all" and of the instance, empty when neither is set.
func (in *Install) restartToken(name string) string {
	if in.Spec.Actions == nil {
		return ""
	}
	all, own := string(in.Spec.Actions.Restart[restartAll]), string(in.Spec.Actions.Restart[name])
	switch {
	case all == "":
		return own
	case own == "":
		return restartAll + "=" + all
	}
	return restartAll + "=" + all + "," + name + "=" + own
}

// withRestart stamps an instance's restart tokens on its pod template.
func (in *Install) withRestart(tpl *corev1.PodTemplateSpec, name string) {
	if t := in.restartToken(name); t != "" {
		tpl.Annotations[annotationRestart] = t
	}
}

// actions composes the on-demand Backup and reports every action.
func (r *renderer) actions() {
	in := r.in
	a := in.Spec.Actions
	if a == nil {
		return
	}
	st := &v1alpha1.ActionsStatus{}
	for _, k := range sortedKeys(a.Restart) {
		rs := v1alpha1.RestartStatus{Token: string(a.Restart[k])}
		for _, name := range in.instanceNames() {
			if k != restartAll && k != name {
				continue
			}
			w, ok := r.opt.Observed.Workloads[name]
			if !ok || !w.Ready || w.Restart != in.restartToken(name) {
				rs.Pending = append(rs.Pending, name)
			}
		}
		rs.Done = len(rs.Pending) == 0
		if st.Restarts == nil {
			st.Restarts = map[string]v1alpha1.RestartStatus{}
		}
		st.Restarts[k] = rs
	}
	if a.Backup != "" && in.Spec.Postgres.Mode == modeInCluster && in.Spec.Postgres.Backup != nil {
		b := in.backupNow(a.Backup)
		run, seen := r.opt.Observed.Backups[b.GetName()]
		// Done either way: a failed Backup is reported, not retried.
		r.add(keyBackupNow+a.Backup, b, seen && (run.Phase == backupCompleted || run.Phase == backupFailed))
		st.Backup = &v1alpha1.BackupRun{Name: b.GetName(), Phase: run.Phase, Time: run.Time}
		if !seen {
			st.Backup.Phase = backupUnobserved
		}
	}
	r.out.Status.Actions = st
}

// backupNow is the on-demand Backup of a token, taken as the pre-upgrade
// Backup is.
func (in *Install) backupNow(token string) *unstructured.Unstructured {
	return in.unstructuredObject(apiCNPG, "Backup", in.backupNowName(token), "postgres", map[string]any{
		"cluster":             map[string]any{"name": in.cnpgClusterName()},
		"method":              "plugin",
		"pluginConfiguration": map[string]any{"name": barmanPluginName},
	})
}

// backupNowName names the on-demand Backup of a token.
func (in *Install) backupNowName(token string) string {
	return in.object("postgres-now-" + strings.ToLower(token))
}
