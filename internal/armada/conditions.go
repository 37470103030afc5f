package armada

import (
	"fmt"
	"sort"
	"strings"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
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

// Condition is a condition for the XR and its claim.
type Condition struct {
	Type    string
	Status  bool
	Reason  string
	Message string
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
