package testenv_test

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
)

// sentinelRender is what the test reads of a render with
// spec.redis.inCluster.sentinel: each StatefulSet's container and replica
// count, and the server's Redis client config (its eventsApiRedis block
// and the variables its passwords come from).
type sentinelRender struct {
	redis, sentinel   corev1.Container
	redisN, sentinelN int
	client            redis.UniversalOptions
}

func renderSentinel(t *testing.T) sentinelRender {
	t.Helper()
	out := renderRedis(t, v1alpha1.Redis{Mode: "InCluster", InCluster: &v1alpha1.RedisInCluster{Sentinel: &v1alpha1.RedisSentinel{}}})
	var r sentinelRender
	var serverConfig string
	for _, o := range out.Objects {
		switch obj := o.Object.(type) {
		case *appsv1.StatefulSet:
			switch o.Key {
			case "redis-incluster-statefulset":
				r.redis, r.redisN = obj.Spec.Template.Spec.Containers[0], int(*obj.Spec.Replicas)
			case "redis-incluster-sentinel-statefulset":
				r.sentinel, r.sentinelN = obj.Spec.Template.Spec.Containers[0], int(*obj.Spec.Replicas)
			}
		case *appsv1.Deployment:
			if obj.Name == "armada-server" {
				checkPasswordEnv(t, obj.Spec.Template.Spec.Containers[0])
			}
		case *corev1.Secret:
			if obj.Name == "armada-server-config" {
				serverConfig = string(obj.Data["config.yaml"])
			}
		}
	}
	if r.redisN == 0 || r.sentinelN == 0 || serverConfig == "" {
		t.Fatalf("the render composes %d Redis pods, %d Sentinels and server config %q; want both StatefulSets and the config", r.redisN, r.sentinelN, serverConfig)
	}
	// Armada's server unmarshals eventsApiRedis into go-redis's
	// UniversalOptions (viper's keys are its field names, case-insensitive).
	var cfg struct {
		EventsAPIRedis struct {
			Addrs            []string
			DB               int
			MasterName       string
			Password         string
			SentinelPassword string
		} `json:"eventsApiRedis"`
	}
	if err := yaml.Unmarshal([]byte(serverConfig), &cfg); err != nil {
		t.Fatal(err)
	}
	c := cfg.EventsAPIRedis
	r.client = redis.UniversalOptions{Addrs: c.Addrs, DB: c.DB, MasterName: c.MasterName}
	return r
}

// checkPasswordEnv checks the server reads both the Redis password and
// the Sentinels' from the key the Redis pods' password comes from.
func checkPasswordEnv(t *testing.T, c corev1.Container) {
	t.Helper()
	found := map[string]bool{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == "armada-credentials" && e.ValueFrom.SecretKeyRef.Key == "internal-redis" {
			found[e.Name] = true
		}
	}
	for _, want := range []string{"ARMADA_EVENTSAPIREDIS_PASSWORD", "ARMADA_EVENTSAPIREDIS_SENTINELPASSWORD"} {
		if !found[want] {
			t.Errorf("the server does not read %s from the Redis password (Secret armada-credentials, key internal-redis)", want)
		}
	}
}

// env is a composed container's literal environment with the variables
// the kubelet fills (the password from its Secret) and the test's
// loopback addresses in place of the pods' names and ports.
func env(c corev1.Container, set map[string]string) []string {
	out := []string{"PATH=/usr/bin:/bin"}
	for _, e := range c.Env {
		if v, ok := set[e.Name]; ok {
			out = append(out, e.Name+"="+v)
			continue
		}
		if e.ValueFrom == nil {
			out = append(out, e.Name+"="+e.Value)
		}
	}
	return out
}

// startScript runs a composed container's sh -c script with its /data
// volume at dir.
func startScript(t *testing.T, c corev1.Container, dir string, set map[string]string) *podrun.Process {
	t.Helper()
	if len(c.Command) != 3 || c.Command[0] != "sh" || c.Command[1] != "-c" {
		t.Fatalf("container %s runs %v, want sh -c and a script", c.Name, c.Command)
	}
	script := strings.ReplaceAll(c.Command[2], "/data", dir)
	p, err := podrun.Start("/bin/sh", dir, []string{"-c", script}, env(c, set), filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// TestRedisSentinelFailover runs the composed Sentinel Redis for real:
// each Redis pod's and each Sentinel's start script, as composed, with
// redis-server and redis-server --sentinel on free loopback ports. A
// go-redis client built from the server's composed eventsApiRedis block
// (masterName, the Sentinels' addrs) writes an events stream as Armada's
// event ingester does; the primary is killed; the Sentinels promote a
// replica, and the same client reads the whole stream from it and writes
// again.
func TestRedisSentinelFailover(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal("redis-server is not on PATH: `make system-deps` installs Debian's redis-server")
	}
	r := renderSentinel(t)
	if r.client.MasterName != armada.SentinelMaster || len(r.client.Addrs) != r.sentinelN {
		t.Fatalf("the server's eventsApiRedis has masterName %q and addrs %v; want %q and one address per Sentinel (%d)",
			r.client.MasterName, r.client.Addrs, armada.SentinelMaster, r.sentinelN)
	}
	password := testenv.RandomPassword(t)
	redisPorts := make([]int, r.redisN)
	for i := range redisPorts {
		redisPorts[i] = testenv.FreePort(t)
	}
	sentinelPorts := make([]int, r.sentinelN)
	for i := range sentinelPorts {
		sentinelPorts[i] = testenv.FreePort(t)
	}
	// Every pod's name is 127.0.0.1 here; pod 0 is the first primary.
	common := func(port, sentinelPort int) map[string]string {
		return map[string]string{
			"REDIS_PASSWORD": password, "POD_NAME": "", "SELF_HOST": "127.0.0.1",
			"PRIMARY_HOST": "127.0.0.1", "PRIMARY_PORT": strconv.Itoa(redisPorts[0]),
			"REDIS_PORT": strconv.Itoa(port), "SENTINEL_HOST": "127.0.0.1", "SENTINEL_PORT": strconv.Itoa(sentinelPort),
		}
	}
	procs := make([]*podrun.Process, r.redisN)
	for i := range r.redisN {
		procs[i] = startScript(t, r.redis, t.TempDir(), common(redisPorts[i], sentinelPorts[0]))
		waitListening(t, redisPorts[i], procs[i])
	}
	for i := range r.sentinelN {
		p := startScript(t, r.sentinel, t.TempDir(), common(0, sentinelPorts[i]))
		waitListening(t, sentinelPorts[i], p)
	}

	// The composed addrs are the Sentinel pods' names: they reach the
	// Sentinels here, as the pods' DNS would.
	names := podrun.NewNames()
	t.Cleanup(names.Close)
	for i, a := range r.client.Addrs {
		if err := names.Relay(a, net.JoinHostPort("127.0.0.1", strconv.Itoa(sentinelPorts[i]))); err != nil {
			t.Fatal(err)
		}
	}
	opts := r.client
	opts.Password, opts.SentinelPassword = password, password
	opts.Dialer = func(ctx context.Context, _, addr string) (net.Conn, error) { return names.Dial(ctx, addr) }
	client := redis.NewUniversalClient(&opts)
	t.Cleanup(func() { _ = client.Close() })
	if _, ok := client.(*redis.Client); !ok {
		t.Fatalf("go-redis builds a %T from the composed config, want a Sentinel failover client", client)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const stream, entries = "Events:queue-a:jobset-1", 50
	for i := range entries {
		if err := client.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: map[string]any{"message": "event-" + strconv.Itoa(i)}}).Err(); err != nil {
			t.Fatalf("XADD through the Sentinels' primary: %v", err)
		}
	}
	// Every replica has the stream before the primary dies (a failover
	// may lose writes not yet replicated: Redis replicates
	// asynchronously).
	for {
		n, err := client.Do(ctx, "WAIT", r.redisN-1, 1000).Int()
		if err == nil && n == r.redisN-1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("WAIT: %d replicas acknowledged the stream (%v), want %d", n, err, r.redisN-1)
		}
	}
	sentinel := redis.NewSentinelClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(sentinelPorts[1])), Password: password})
	t.Cleanup(func() { _ = sentinel.Close() })
	before, err := sentinel.GetMasterAddrByName(ctx, armada.SentinelMaster).Result()
	if err != nil || before[1] != strconv.Itoa(redisPorts[0]) {
		t.Fatalf("the Sentinels name primary %v (%v), want pod 0 on port %d", before, err, redisPorts[0])
	}

	start := time.Now()
	procs[0].Stop()
	var after []string
	for {
		after, err = sentinel.GetMasterAddrByName(ctx, armada.SentinelMaster).Result()
		if err == nil && after[1] != before[1] {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no replica was promoted after the primary was killed: the Sentinels name %v (%v)", after, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("the Sentinels promoted %s:%s %s after the primary was killed", after[0], after[1], time.Since(start).Round(100*time.Millisecond))
	var n int64
	for {
		n, err = client.XLen(ctx, stream).Result()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the client did not reach the promoted primary: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n != entries {
		t.Errorf("after the failover the stream holds %d entries, want %d", n, entries)
	}
	if err := client.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: map[string]any{"message": "after-failover"}}).Err(); err != nil {
		t.Errorf("XADD after the failover: %v", err)
	}
}

// waitListening waits until something accepts connections on port.
func waitListening(t *testing.T, port int, p *podrun.Process) {
	t.Helper()
	if !podrun.Listening(port, 30*time.Second) {
		t.Fatalf("nothing listens on port %d; log:\n%s", port, p.Log())
	}
}
