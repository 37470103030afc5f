package armada

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Migrations: Armada's database migrations, one Job per database and
// version, each with its own config Secret. A component whose database
// they migrate waits for its migration (renderer.workloadGate).

// A migration is a one-shot schema migration run by a component's image.
type migration struct {
	// Name of the database the migration owns: "scheduler" or "lookout".
	Name string
	// Image is the image (without org and tag) that contains the migrator.
	Image string
	// Args run the migration given the config file path.
	Args []string
}

// migrations are Armada's two schema migrations. Their Jobs are named per
// Armada version, so an upgrade creates and runs new ones.
var migrations = []migration{
	{Name: dbLookout, Image: "armada-lookout", Args: []string{"--migrateDatabase", "--config", configPath}},
	{Name: dbScheduler, Image: "armada-scheduler", Args: []string{"migrateDatabase", "--config", configPath, "--timeout", "5m"}},
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

// migrationJob runs a schema migration once for one Armada version,
// database config and pod spec, and returns it with its composition
// resource name. A Job's template is immutable, so the name carries the
// version and a hash of the config and the pod spec: an upgrade, a move to
// another database or a change of image registry, resources or security
// context creates a new Job that migrates again rather than failing to
// edit the old one.
func (in *Install) migrationJob(m migration, version, configSecret, configHash string) (*batchv1.Job, string, error) {
	name := "migrate-" + m.Name
	c := &component{Name: "migrate", Database: m.Name}
	tpl := in.podTemplate(podOptions{
		Component:    c,
		Name:         name,
		Image:        in.image(m.Image, version, nil),
		Args:         m.Args,
		Resources:    migrationResources(),
		ConfigSecret: configSecret,
		ConfigHash:   configHash,
		Version:      version,
	})
	hash, err := jobHash(configHash, &tpl.Spec)
	if err != nil {
		return nil, "", err
	}
	key := "migrate-" + m.Name + "-" + versionSuffix(version) + "-" + hash[:6]
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: in.meta(in.object(key), name),
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](6),
			Template:     tpl,
		},
	}, key, nil
}

// jobHash is the hash a Job's name carries: of what the Job reads (its
// config's hash, or its environment) and of its pod spec, which a Job
// cannot change once created. Labels and annotations are left out, so a
// change to them alone does not run the Job again.
func jobHash(inputs string, spec *corev1.PodSpec) (string, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return "", errors.Wrap(err, "cannot encode a Job's pod spec")
	}
	// configHash of inputs, a newline and b, without joining them first.
	h := sha256.New()
	h.Write([]byte(inputs + "\n"))
	h.Write(b)
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:8]), nil
}

// migrationConfig is the config of a migration Job: only the database.
func migrationConfig(in *Install, m migration) map[string]any {
	return map[string]any{"postgres": in.postgres(m.Name)}
}
