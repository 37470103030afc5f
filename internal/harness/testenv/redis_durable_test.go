package testenv_test

import (
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
)

// renderRedis renders a minimal Armada with redis as its spec.redis.
func renderRedis(t *testing.T, redis v1alpha1.Redis) *armada.Output {
	t.Helper()
	in, errs := armada.New(armada.XR{Name: "armada", Spec: v1alpha1.ArmadaSpec{
		Namespace: "armada",
		Postgres:  v1alpha1.Postgres{Host: "pg", User: "armada", PasswordSecretRef: &v1alpha1.SecretKeyRef{Name: "pg", Key: "password"}},
		Redis:     redis,
		Pulsar:    v1alpha1.Pulsar{URL: "pulsar://pulsar:6650", AdminURL: "http://pulsar:8080"},
		Auth:      v1alpha1.Auth{BasicUsers: []v1alpha1.BasicUser{{Name: "admin"}}},
	}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	out, err := armada.Render(in, armada.Options{Rand: armada.KeyedRand([]byte("test"), "xr")})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRedisKeepsStreamsAcrossRestart runs a real redis-server with the
// composed in-cluster Redis's arguments (its /data volume a directory
// that outlives the process, its port a free loopback one), writes an
// events stream as Armada's event ingester does, kills the server as a
// crash or an evicted pod would, starts it again on the same directory
// and reads the stream back.
func TestRedisKeepsStreamsAcrossRestart(t *testing.T) {
	out := renderRedis(t, v1alpha1.Redis{Mode: "InCluster"})
	var args []string
	for _, o := range out.Objects {
		if sts, ok := o.Object.(*appsv1.StatefulSet); ok && o.Key == "redis-incluster-statefulset" {
			args = sts.Spec.Template.Spec.Containers[0].Args
		}
	}
	if args == nil {
		t.Fatal("the in-cluster Redis StatefulSet is not composed")
	}
	password := testenv.RandomPassword(t)
	volume := t.TempDir()
	args = composedRedisArgs(t, args, password, volume)

	first := testenv.StartRedisArgs(t, password, args)
	const entries = 50
	for i := range entries {
		if _, err := first.Do(password, "XADD", "Events:queue-a:jobset-1", "*", "message", "event-"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	first.Kill()

	second := testenv.StartRedisArgs(t, password, args)
	got, err := second.Do(password, "XLEN", "Events:queue-a:jobset-1")
	if err != nil {
		t.Fatal(err)
	}
	if got != strconv.Itoa(entries) {
		t.Errorf("after a restart the stream holds %s entries, want %d: the composed Redis does not persist its streams on its volume (args %v)", got, entries, args)
	}
}

// composedRedisArgs are the composed arguments with what the kubelet and
// the pod provide replaced: the password the kubelet expands from the
// Secret, the volume's mount path and the container port.
func composedRedisArgs(t *testing.T, args []string, password, volume string) []string {
	t.Helper()
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "--port":
			i++ // StartRedisArgs picks a free port.
		case args[i] == "--dir" && i+1 < len(args) && args[i+1] == "/data":
			out = append(out, "--dir", volume)
			i++
		default:
			out = append(out, strings.ReplaceAll(args[i], "$(REDIS_PASSWORD)", password))
		}
	}
	return out
}
