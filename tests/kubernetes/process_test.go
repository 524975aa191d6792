package kubernetes

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// process is one child the test started (etcd, kube-apiserver, kube-controller-manager,
// scale-units serve), its output in a log file of the run's folder; stop ends it.
type process struct {
	name   string
	cmd    *exec.Cmd
	logs   string
	exited chan struct{}
}

// startProcess starts bin with args and this process's environment plus extra, its stderr (and
// stdout unless stdout is given) to DIR/NAME.log.
func startProcess(dir, name, bin string, args []string, stdout io.Writer, extra ...string) (*process, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s: %w (run `make kubernetes-setup`, or `cargo build -p scale-units-cli` for scale-units)", name, err)
	}
	logs := filepath.Join(dir, name+".log")
	file, err := os.OpenFile(logs, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), extra...)
	cmd.Stderr = file
	cmd.Stdout = file
	if stdout != nil {
		cmd.Stdout = stdout
	}
	// Its own process group: a Ctrl-C of `go test` reaches the test, which stops it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = file.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logs: logs, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = file.Close()
		close(p.exited)
	}()
	return p, nil
}

// running reports whether the process has not exited.
func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// signal sends sig to the process.
func (p *process) signal(sig syscall.Signal) error {
	return p.cmd.Process.Signal(sig)
}

// stop sends SIGTERM (SIGCONT first, in case it was stopped) and waits; SIGKILL after 20 s.
func (p *process) stop() {
	if p == nil || !p.running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// tail is the end of the process's log, for an error message.
func (p *process) tail() string {
	data, err := os.ReadFile(p.logs)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > 25 {
		lines = lines[len(lines)-25:]
	}
	return strings.Join(lines, "\n")
}

// freePort is a loopback port free now (the kernel's pick, released for the child to bind).
func freePort() (int, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer listener.Close()
	return listener.Addr().(*net.TCPAddr).Port, nil
}

// waitFor polls ready every 100 ms until it returns nil, the process exits, or limit passes.
func waitFor(p *process, limit time.Duration, ready func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		if !p.running() {
			return fmt.Errorf("%s exited before it was ready (%v):\n%s", p.name, err, p.tail())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s (%v):\n%s", p.name, limit, err, p.tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readLine reads one line of a child's stdout, or fails after limit.
func readLine(reader *bufio.Reader, limit time.Duration) (string, error) {
	type result struct {
		line string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		line, err := reader.ReadString('\n')
		got <- result{line, err}
	}()
	select {
	case r := <-got:
		return strings.TrimSpace(r.line), r.err
	case <-time.After(limit):
		return "", errors.New("no line on stdout")
	}
}

// httpOK is nil when GET url answers 200.
func httpOK(url string, config *tls.Config) error {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: config}}
	response, err := client.Get(url)
	if err != nil {
		return err
	}
	defer response.Body.Close()
	body, _ := io.ReadAll(response.Body)
	if response.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", url, response.StatusCode, body)
	}
	return nil
}

// adminGet is httpOK on the API server as admin.
func (c *cluster) adminGet(path string) error {
	pair, err := tls.LoadX509KeyPair(c.pki("user-admin.crt"), c.pki("user-admin.key"))
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(c.clusterCA.certPEM)
	return httpOK(c.apiserverURL+path, &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: roots, MinVersion: tls.VersionTLS12})
}
