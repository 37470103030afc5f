package controlplane

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// startEtcd starts a single-member etcd on loopback ports and waits until it
// reports healthy. It skips fsync: the data is throwaway.
func (c *ControlPlane) startEtcd(ctx context.Context) error {
	client := fmt.Sprintf("http://127.0.0.1:%d", c.ports.etcdClient)
	peer := fmt.Sprintf("http://127.0.0.1:%d", c.ports.etcdPeer)
	p := c.newProcess(ProcEtcd, c.opts.Etcd, []string{
		"--name=cp",
		"--data-dir=" + filepath.Join(c.dir, "etcd"),
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=cp=" + peer,
		"--unsafe-no-fsync",
		"--log-level=warn",
	}, nil)
	if err := p.start(); err != nil {
		return err
	}
	return p.waitReady(ctx, stepTimeout, "etcd /health", func(ctx context.Context) error {
		return httpGetOK(ctx, http.DefaultClient, client+"/health", `"health":"true"`)
	})
}

// etcdURL returns the URL clients reach etcd at.
func (c *ControlPlane) etcdURL() string {
	return "http://127.0.0.1:" + strconv.Itoa(c.ports.etcdClient)
}

// httpGetOK GETs url and returns nil if the response is 200 and its body
// contains want.
func httpGetOK(ctx context.Context, hc *http.Client, url, want string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return errors.Wrap(err, "cannot create request")
	}
	return doOK(hc, req, want)
}

// doOK sends req and returns nil if the response is 200 and its body
// contains want.
func doOK(hc *http.Client, req *http.Request, want string) error {
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close() //nolint:errcheck // Only the body read matters.
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return errors.Wrapf(err, "cannot read response from %s", req.URL)
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
		return errors.Errorf("%s returned %s: %s", req.URL, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}
