package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestUpgradeWaitsForBackup upgrades the backups example from 0.22.6 to
// 0.22.7: the pre-upgrade CloudNativePG Backup is composed first and the
// 0.22.7 migration Jobs are not composed while it has not completed. A
// failed Backup holds the upgrade (BackupFailed) with the running
// components on 0.22.6; deleting it takes it again, and once it has
// completed the migrations run and the upgrade finishes. CloudNativePG
// does not run here: the test sets the Backup's status.phase as its
// operator would.
func TestUpgradeWaitsForBackup(t *testing.T) {
	parallel(t)
	const ns = "e2e-backup-upgrade"
	claim := install(t, "backups", ns, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "0.22.6", "spec", "version")
	})
	converge(t, claim)
	backup := claim.GetName() + "-postgres-pre-0-22-7"
	if b := get(t, "postgresql.cnpg.io/v1", "Backup", ns, backup); b != nil {
		t.Fatalf("Backup %s composed before any upgrade", backup)
	}

	c := get(t, claimAPIVersion, "ArmadaClaim", ns, claim.GetName())
	_ = unstructured.SetNestedField(c.Object, "0.22.7", "spec", "version")
	apply(t, c)
	waitFor(t, "Backup "+backup+" composed", func() (bool, string) {
		return get(t, "postgresql.cnpg.io/v1", "Backup", ns, backup) != nil, "not yet"
	})
	held := func(reason string) {
		t.Helper()
		migrationsReason(t, claim, reason)
		settled(t, claim)
		if n := upgradeJobs(t, ns); n != 0 {
			t.Errorf("%d 0.22.7 migration Jobs composed while the Backup is held (%s), want 0", n, reason)
		}
		if got := serverImage(t, ns); got != "gresearch/armada-server:0.22.6" {
			t.Errorf("server image while the Backup is held (%s) = %s, want 0.22.6 kept", reason, got)
		}
	}
	held("WaitingForBackup")

	setBackupPhase(t, ns, backup, "failed")
	held("BackupFailed")

	// Deleting the failed Backup takes it again, as the claim's message
	// tells the user.
	b := get(t, "postgresql.cnpg.io/v1", "Backup", ns, backup)
	if err := kube().Delete(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Backup "+backup+" taken again", func() (bool, string) {
		n := get(t, "postgresql.cnpg.io/v1", "Backup", ns, backup)
		if n == nil {
			return false, "gone"
		}
		return n.GetUID() != b.GetUID(), "still the failed one"
	})
	held("WaitingForBackup")

	setBackupPhase(t, ns, backup, "completed")
	waitFor(t, "0.22.7 migration Jobs after the Backup completed", func() (bool, string) {
		n := upgradeJobs(t, ns)
		return n == 2, fmt.Sprintf("%d of 2", n)
	})
	converge(t, claim)
	if got := serverImage(t, ns); got != "gresearch/armada-server:0.22.7" {
		t.Errorf("server image after the upgrade = %s, want 0.22.7", got)
	}
	c = get(t, claimAPIVersion, "ArmadaClaim", ns, claim.GetName())
	last, _, _ := unstructured.NestedStringMap(c.Object, "status", "backup", "lastBackup")
	if last["name"] != backup || last["phase"] != "completed" {
		t.Errorf("claim status.backup.lastBackup = %v, want %s completed", last, backup)
	}
}

// migrationsReason waits until the claim's MigrationsComplete condition is
// False with reason.
func migrationsReason(t *testing.T, claim *unstructured.Unstructured, reason string) {
	t.Helper()
	waitFor(t, "claim MigrationsComplete=False/"+reason, func() (bool, string) {
		c := get(t, claimAPIVersion, "ArmadaClaim", claim.GetNamespace(), claim.GetName())
		s, r, m := condition(c, "MigrationsComplete")
		return s == "False" && r == reason, fmt.Sprintf("MigrationsComplete=%s %s: %s", s, r, m)
	})
}

// setBackupPhase reports a Backup's phase as CloudNativePG would.
func setBackupPhase(t *testing.T, ns, name, phase string) {
	t.Helper()
	waitFor(t, "Backup "+name+" phase "+phase, func() (bool, string) {
		b := get(t, "postgresql.cnpg.io/v1", "Backup", ns, name)
		if b == nil {
			return false, "Backup gone"
		}
		_ = unstructured.SetNestedField(b.Object, phase, "status", "phase")
		_ = unstructured.SetNestedField(b.Object, "2026-01-01T00:00:00Z", "status", "stoppedAt")
		if err := kube().Status().Update(context.Background(), b); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// upgradeJobs counts the 0.22.7 migration Jobs in ns.
func upgradeJobs(t *testing.T, ns string) int {
	t.Helper()
	jobs := &batchv1.JobList{}
	if err := kube().List(context.Background(), jobs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, j := range jobs.Items {
		if strings.Contains(j.Name, "-0-22-7-") {
			n++
		}
	}
	return n
}

// serverImage is the armada-server Deployment's image.
func serverImage(t *testing.T, ns string) string {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := kube().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "armada-server"}, d); err != nil {
		t.Fatal(err)
	}
	return d.Spec.Template.Spec.Containers[0].Image
}
