//go:build !js

package serve_test

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestServeMetricsApart runs `tongbu serve -metrics-addr` with a metrics
// token: the public address serves no metrics, the private one serves
// them to the token only.
func TestServeMetricsApart(t *testing.T) {
	cmd := exec.Command(tongbuBinary(t), "serve", "-http", "127.0.0.1:0", "-udp", "0", "-loopback",
		"-rooms", "1", "-metrics-addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "TONGBU_SECRET=0123456789abcdef0123", "TONGBU_METRICS_TOKEN=s3cret")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("stderr:\n%s", stderr.String())
		}
	})
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		io.Copy(io.Discard, out)
		exited <- cmd.Wait()
	}()
	var line string
	select {
	case line = <-lines:
	case err := <-exited:
		t.Fatalf("exited before serving: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("did not start in 20 s")
	}
	// tongbu serve: http://127.0.0.1:N (UDP ...); metrics at http://127.0.0.1:M/metrics
	public, _, _ := strings.Cut(strings.TrimPrefix(line, "tongbu serve: "), " ")
	_, private, ok := strings.Cut(line, "metrics at ")
	if !strings.HasPrefix(public, "http://") || !ok || !strings.HasPrefix(private, "http://") {
		t.Fatalf("unexpected first line %q", line)
	}
	get := func(url, token string) int {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tt := range []struct {
		url, token string
		code       int
	}{
		{public + "/metrics", "s3cret", http.StatusNotFound},
		{public + "/healthz", "", http.StatusOK},
		{private, "", http.StatusUnauthorized},
		{private, "s3cret", http.StatusOK},
	} {
		if code := get(tt.url, tt.token); code != tt.code {
			t.Fatalf("GET %s (token %q): %d, want %d", tt.url, tt.token, code, tt.code)
		}
	}
}
