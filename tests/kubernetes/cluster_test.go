// Package kubernetes runs the project against a real Kubernetes control plane on loopback: etcd,
// kube-apiserver and kube-controller-manager (deployment, replicaset, horizontal-pod-autoscaler,
// serviceaccount and token controllers) built from k8s.io/kubernetes v1.37.2 by `make
// kubernetes-setup`, kubectl from the same module, and the real `scale-units serve` as the
// shipped configuration runs it (deploy/kubernetes: its serve.yaml, its ServiceAccount's RBAC,
// its webhook), with only addresses, certificates and file paths changed: it watches the API
// server, keeps each ScaleUnit's status and answers the validating admission webhook and KEDA;
// for the HPA scenarios (hpa_test.go) KEDA v2.21's operator and metrics adapter, built from the
// module proxy, behind the API server's aggregation layer. No kubelet: pods stay pending, and a
// Deployment's scale still moves. TestMain starts everything once and stops it at the end; a
// component that cannot start fails the run with the reason.
package kubernetes

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The users of the test's cluster, by client certificate (the organization is the group).
const (
	admin     = "admin" // system:masters
	alice     = "alice" // the override group
	bob       = "bob"   // may edit Deployments, not in the override group
	overrides = "scale-units:break-glass"
)

// cluster is the running control plane and service; one per `go test` run.
type cluster struct {
	dir        string
	root       string // the repository
	bin        string // target/kubernetes/bin
	crds       string // target/kubernetes/crds
	kubectlBin string

	clusterCA, webhookCA *authority
	// The aggregator's client CA (--requestheader-client-ca-file): what KEDA's metrics adapter
	// trusts for the API server's proxied requests.
	frontProxyCA            *authority
	kubeconfigs             map[string]string
	webhookCert, webhookKey string

	etcd, apiserver, controllers *process
	service                      *service
	apiserverURL                 string
	client                       *kubernetes.Clientset

	// started is how long etcd + kube-apiserver + kube-controller-manager took to be ready.
	started time.Duration
}

var env *cluster

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	c, err := newCluster()
	if err == nil {
		env = c
		err = c.start()
	}
	if c != nil {
		defer c.stop()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: the Kubernetes control plane could not start: %v\n", err)
		return 1
	}
	fmt.Printf("control plane (etcd, kube-apiserver, kube-controller-manager) ready in %s\n", c.started.Round(time.Millisecond))
	return m.Run()
}

func newCluster() (*cluster, error) {
	root, err := filepath.Abs("../..")
	if err != nil {
		return nil, err
	}
	target := os.Getenv("CARGO_TARGET_DIR")
	if target == "" {
		target = filepath.Join(root, "target")
	}
	bin := envOr("SCALE_UNITS_KUBERNETES_BIN", filepath.Join(target, "kubernetes", "bin"))
	dir, err := os.MkdirTemp("", "scale-units-kubernetes-")
	if err != nil {
		return nil, err
	}
	c := &cluster{
		dir:         dir,
		root:        root,
		bin:         bin,
		crds:        envOr("SCALE_UNITS_KUBERNETES_CRDS", filepath.Join(target, "kubernetes", "crds")),
		kubectlBin:  filepath.Join(bin, "kubectl"),
		kubeconfigs: map[string]string{},
	}
	c.service = &service{
		bin:   envOr("SCALE_UNITS_BIN", filepath.Join(target, "debug", "scale-units")),
		dir:   filepath.Join(dir, "service"),
		units: filepath.Join(dir, "service", "units"),
	}
	return c, nil
}

func envOr(name, fallback string) string {
	if value := os.Getenv(name); value != "" {
		return value
	}
	return fallback
}

func (c *cluster) start() error {
	if err := c.makePKI(); err != nil {
		return fmt.Errorf("certificates: %w", err)
	}
	// The service's addresses first: the shipped webhook is installed pointing at them.
	if err := c.service.pickAddresses(); err != nil {
		return err
	}
	began := time.Now()
	if err := c.startEtcd(); err != nil {
		return err
	}
	if err := c.startAPIServer(); err != nil {
		return err
	}
	if err := c.startControllers(); err != nil {
		return err
	}
	c.started = time.Since(began)
	if err := c.install(); err != nil {
		return err
	}
	if err := c.service.start(c); err != nil {
		return err
	}
	return c.waitForWebhook()
}

func (c *cluster) stop() {
	c.service.stop()
	c.controllers.stop()
	c.apiserver.stop()
	c.etcd.stop()
	if os.Getenv("SCALE_UNITS_KUBERNETES_KEEP") == "" {
		_ = os.RemoveAll(c.dir)
	} else {
		fmt.Printf("kept %s\n", c.dir)
	}
}

func (c *cluster) makePKI() error {
	pki := filepath.Join(c.dir, "pki")
	if err := os.MkdirAll(c.service.units, 0o700); err != nil {
		return err
	}
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return err
	}
	var err error
	if c.clusterCA, err = newAuthority("cluster-ca"); err != nil {
		return err
	}
	if c.webhookCA, err = newAuthority("webhook-serving-ca"); err != nil {
		return err
	}
	if c.frontProxyCA, err = newAuthority("front-proxy-ca"); err != nil {
		return err
	}
	if c.webhookCert, c.webhookKey, err = c.webhookCA.writeIssued(pki, "webhook", nil, true); err != nil {
		return err
	}
	for file, data := range map[string][]byte{
		"cluster-ca.crt":     c.clusterCA.certPEM,
		"webhook-ca.crt":     c.webhookCA.certPEM,
		"front-proxy-ca.crt": c.frontProxyCA.certPEM,
	} {
		if err := os.WriteFile(filepath.Join(pki, file), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func (c *cluster) pki(name string) string { return filepath.Join(c.dir, "pki", name) }

func (c *cluster) startEtcd() error {
	client, err := freePort()
	if err != nil {
		return err
	}
	peer, err := freePort()
	if err != nil {
		return err
	}
	clientURL, peerURL := fmt.Sprintf("http://127.0.0.1:%d", client), fmt.Sprintf("http://127.0.0.1:%d", peer)
	c.etcd, err = startProcess(c.dir, "etcd", filepath.Join(c.bin, "etcd"), []string{
		"--name", "default", "--data-dir", filepath.Join(c.dir, "etcd"),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "default=" + peerURL, "--log-level", "warn",
	}, nil)
	if err != nil {
		return err
	}
	return waitFor(c.etcd, 60*time.Second, func() error { return httpOK(clientURL+"/health", nil) })
}

func (c *cluster) startAPIServer() error {
	pki := filepath.Join(c.dir, "pki")
	serving, servingKey, err := c.clusterCA.writeIssued(pki, "apiserver", nil, true)
	if err != nil {
		return err
	}
	saKey, saPub, err := writeKeyPair(pki)
	if err != nil {
		return err
	}
	proxyClient, proxyClientKey, err := c.frontProxyCA.writeIssued(pki, "front-proxy-client", nil, false)
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	c.apiserverURL = fmt.Sprintf("https://127.0.0.1:%d", port)
	for user, groups := range map[string][]string{admin: {"system:masters"}, alice: {overrides}, bob: {"scale-units-test:editors"}} {
		if err := c.writeKubeconfig(user, groups); err != nil {
			return err
		}
	}
	c.apiserver, err = startProcess(c.dir, "kube-apiserver", filepath.Join(c.bin, "kube-apiserver"), []string{
		"--etcd-servers", c.etcd.argValue("--listen-client-urls"),
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", fmt.Sprint(port),
		"--tls-cert-file", serving, "--tls-private-key-file", servingKey,
		"--client-ca-file", c.pki("cluster-ca.crt"),
		"--authorization-mode", "RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", saPub, "--service-account-signing-key-file", saKey,
		"--service-cluster-ip-range", "10.96.0.0/16",
		"--endpoint-reconciler-type", "none",
		"--cert-dir", filepath.Join(c.dir, "apiserver-certs"),
		// The aggregation layer, as kubeadm sets it up: KEDA's external metrics API is served
		// through it (hpa_test.go).
		"--requestheader-client-ca-file", c.pki("front-proxy-ca.crt"),
		"--requestheader-allowed-names", "front-proxy-client",
		"--requestheader-username-headers", "X-Remote-User",
		"--requestheader-group-headers", "X-Remote-Group",
		"--requestheader-extra-headers-prefix", "X-Remote-Extra-",
		"--proxy-client-cert-file", proxyClient, "--proxy-client-key-file", proxyClientKey,
	}, nil)
	if err != nil {
		return err
	}
	if err := waitFor(c.apiserver, 120*time.Second, func() error { return c.adminGet("/readyz") }); err != nil {
		return err
	}
	config, err := clientcmd.BuildConfigFromFlags("", c.kubeconfigs[admin])
	if err != nil {
		return err
	}
	c.client, err = kubernetes.NewForConfig(config)
	return err
}

func (c *cluster) writeKubeconfig(user string, groups []string) error {
	cert, key, err := c.clusterCA.writeIssued(filepath.Join(c.dir, "pki"), "user-"+user, groups, false)
	if err != nil {
		return err
	}
	path := filepath.Join(c.dir, user+".kubeconfig")
	c.kubeconfigs[user] = path
	return os.WriteFile(path, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
  - name: test
    cluster:
      server: %s
      certificate-authority: %s
users:
  - name: %s
    user:
      client-certificate: %s
      client-key: %s
contexts:
  - name: test
    context: {cluster: test, user: %s}
current-context: test
`, c.apiserverURL, c.pki("cluster-ca.crt"), user, cert, key, user)), 0o600)
}

func (c *cluster) startControllers() error {
	var err error
	c.controllers, err = startProcess(c.dir, "kube-controller-manager", filepath.Join(c.bin, "kube-controller-manager"), []string{
		"--kubeconfig", c.kubeconfigs[admin],
		"--controllers", "deployment-controller,replicaset-controller,horizontal-pod-autoscaler-controller,serviceaccount-controller",
		"--leader-elect=false", "--secure-port", "0", "--use-service-account-credentials=false",
		"--horizontal-pod-autoscaler-sync-period", "2s",
	}, nil)
	if err != nil {
		return err
	}
	// Ready once the serviceaccount controller has made `default` in kube-system.
	return waitFor(c.controllers, 120*time.Second, func() error {
		_, err := c.client.CoreV1().ServiceAccounts("kube-system").Get(context.Background(), "default", getOptions)
		return err
	})
}

// argValue is the value after flag in the process's arguments.
func (p *process) argValue(flag string) string {
	for i, arg := range p.cmd.Args {
		if arg == flag && i+1 < len(p.cmd.Args) {
			return p.cmd.Args[i+1]
		}
	}
	return ""
}

// kubectlCommand is kubectl as user, its discovery and HTTP caches in the cluster's folder
// rather than the default ~/.kube/cache of whoever runs the tests.
func (c *cluster) kubectlCommand(ctx context.Context, user string, args ...string) *exec.Cmd {
	flags := []string{"--kubeconfig", c.kubeconfigs[user], "--cache-dir", filepath.Join(c.dir, "kubectl-cache")}
	return execCommand(ctx, c.kubectlBin, append(flags, args...)...)
}

// kubectl runs kubectl as user; returns stdout, stderr and the error (a non-zero exit).
func (c *cluster) kubectl(user string, args ...string) (string, string, error) {
	return c.kubectlIn(user, "", args...)
}

func (c *cluster) kubectlIn(user, stdin string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := c.kubectlCommand(ctx, user, append([]string{"--request-timeout", "60s"}, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}
