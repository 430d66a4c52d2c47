//go:build !js

package serve_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// TestReadmeCommands runs the shell commands of README.md and the guides
// (docs/) as a new user types them, from the checkout's root: the install line, the game
// module's dependency on a checkout beside it, `tongbu serve` and `tongbu
// ticket` without writing Go, and worlds across two processes on a NATS
// server started with the README's own command. Each block is found by a
// command it holds and run by bash as written, but that a command which
// serves in the foreground is sent to the background, and a curl is
// polled from here until it answers.
func TestReadmeCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the README's processes")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	blocks := shellBlocks(t, filepath.Join(root, "README.md"))
	guides, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for _, g := range guides {
		blocks = append(blocks, shellBlocks(t, g)...)
	}
	bin := filepath.Dir(tongbuBinary(t)) // tongbu on the PATH, as go install puts it

	t.Run("install", func(t *testing.T) {
		gobin := t.TempDir()
		runBlock(t, root, block(t, blocks, "go install ./cmd/tongbu"), []string{"GOBIN=" + gobin})
		if _, err := os.Stat(filepath.Join(gobin, "tongbu")); err != nil {
			t.Fatalf("go install left no tongbu: %v", err)
		}
	})

	t.Run("module", func(t *testing.T) {
		// A game's module beside the checkout, as the README assumes:
		// ../tongbu is the checkout.
		dir := t.TempDir()
		if err := os.Symlink(root, filepath.Join(dir, "tongbu")); err != nil {
			t.Fatal(err)
		}
		game := filepath.Join(dir, "mygame")
		writeFile(t, filepath.Join(game, "go.mod"), "module mygame\n\ngo 1.25\n")
		writeFile(t, filepath.Join(game, "main.go"), `package main

import (
	"fmt"

	"github.com/tongbu/tongbu/engine"
)

func main() { fmt.Println(engine.WireVersion) }
`)
		runBlock(t, game, block(t, blocks, "go mod edit -require=github.com/tongbu/tongbu"), nil)
		out, err := exec.Command("go", "-C", game, "run", ".").CombinedOutput()
		if err != nil {
			t.Fatalf("the game's module does not build on the checkout: %v\n%s", err, out)
		}
	})

	t.Run("serve", func(t *testing.T) {
		freePorts(t, "tcp:8080", "udp:3478")
		var script []string
		for _, l := range block(t, blocks, "tongbu ticket -player ann") {
			if strings.HasPrefix(l, "tongbu serve ") && !strings.HasSuffix(l, "&") {
				l += " &" // it serves until killed; the block's next line signs a ticket for it
			}
			script = append(script, l)
		}
		p := startBlock(t, root, append(script, "wait"), []string{"PATH=" + bin + ":" + os.Getenv("PATH")})
		ticket := regexp.MustCompile(`(?m)^[A-Za-z0-9_-]{40,}$`)
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			metrics := get("http://127.0.0.1:8080/metrics")
			if strings.Contains(metrics, "tongbu_rooms 4\n") && ticket.MatchString(p.String()) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no ticket printed, or the relay's four rooms not served, in 30 s:\n%s\n%s", p.String(), metrics)
			}
		}
	})

	t.Run("worlds", func(t *testing.T) {
		freePorts(t, "tcp:4222", "tcp:8081", "tcp:8082", "udp:3479", "udp:3480")
		b := block(t, blocks, "examples/serve/worlds.json")
		var curls []string
		var script []string
		for _, l := range b {
			if strings.HasPrefix(l, "curl ") {
				curls = append(curls, l)
				continue
			}
			script = append(script, l)
		}
		if len(curls) == 0 {
			t.Fatal("the worlds block has no curl to check it by")
		}
		// TMPDIR: the NATS server's fresh store (mktemp) goes with the test.
		p := startBlock(t, root, append(script, "wait"), []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "TMPDIR=" + t.TempDir()})
		url := regexp.MustCompile(`http://\S+`).FindString(curls[0])
		var body string
		// go run builds the NATS server first: 30 s with an empty build
		// cache on an idle 2-core machine, more with its modules to fetch
		// and the suite's other builds beside it; the nodes wait for it
		// (natsStartWait, 5 minutes).
		for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(250 * time.Millisecond) {
			body = get(url)
			if strings.Contains(body, `"field"`) && strings.Contains(body, `"town~2"`) && strings.Contains(body, `{"id":"a"`) && strings.Contains(body, `{"id":"b"`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not list both nodes, the field and the town's lines in 5 minutes: %q\n%s", url, body, p.String())
			}
		}
		// Both nodes are in the cluster, and each world is on one of them
		// (which one is the create queue's pick: all three on one node is
		// a fair draw).
		for _, node := range []string{`{"id":"a"`, `{"id":"b"`} {
			if !strings.Contains(body, node) {
				t.Errorf("node %s is not in %s:\n%s", node, url, body)
			}
		}
		for _, w := range []string{"field", "town~1", "town~2"} {
			if n := strings.Count(body, `"world":"`+w+`"`); n != 1 {
				t.Errorf("world %s is listed %d times in %s:\n%s", w, n, url, body)
			}
		}
	})
}

// shellBlocks returns the lines of every ```sh block of a Markdown file,
// comments cut off.
func shellBlocks(t *testing.T, path string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks [][]string
	var cur []string
	in := false
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case !in && strings.TrimSpace(l) == "```sh":
			in, cur = true, nil
		case in && strings.TrimSpace(l) == "```":
			in = false
			blocks = append(blocks, cur)
		case in:
			if i := strings.Index(l, " #"); i >= 0 {
				l = l[:i]
			}
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				cur = append(cur, l)
			}
		}
	}
	return blocks
}

// block returns the one shell block with a line containing what.
func block(t *testing.T, blocks [][]string, what string) []string {
	t.Helper()
	var found [][]string
	for _, b := range blocks {
		for _, l := range b {
			if strings.Contains(l, what) {
				found = append(found, b)
				break
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("README.md and docs/ have %d shell blocks with %q, want 1", len(found), what)
	}
	return found[0]
}

// runBlock runs a block's lines with bash in dir, each line stopping it
// on failure, and waits for it.
func runBlock(t *testing.T, dir string, lines, env []string) {
	t.Helper()
	var buf bytes.Buffer
	cmd := exec.Command("bash", "-e", "-c", strings.Join(lines, "\n"))
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s:\n%v\n%s", strings.Join(lines, "\n"), err, buf.String())
	}
}

// startBlock starts a block with bash in dir, in a process group of its
// own that is killed when the test ends; it returns the block's output.
func startBlock(t *testing.T, dir string, lines, env []string) *lockedBuffer {
	t.Helper()
	out := &lockedBuffer{}
	cmd := exec.Command("bash", "-e", "-c", strings.Join(lines, "\n"))
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	return out
}

// freePorts fails the test when one of the README's fixed ports is taken
// ("tcp:8080", "udp:3478"): the commands would fail for it, not for what
// they say.
func freePorts(t *testing.T, ports ...string) {
	t.Helper()
	for _, p := range ports {
		network, port, _ := strings.Cut(p, ":")
		var c io.Closer
		var err error
		if network == "tcp" {
			c, err = net.Listen("tcp", ":"+port)
		} else {
			c, err = net.ListenPacket("udp", ":"+port)
		}
		if err != nil {
			t.Fatalf("%s port %s is taken on this machine (the README's commands use it): %v", network, port, err)
		}
		c.Close()
	}
}

// get returns the body at url, or the error's text.
func get(url string) string {
	resp, err := http.Get(url)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%s %s", resp.Status, b)
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestServeWaitsForNATS: a node started before its NATS server listens
// (the README's commands in one go, a compose file) waits for it, says
// so, and joins once it is up, rather than exiting.
func TestServeWaitsForNATS(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	up := make(chan *server.Server, 1)
	go func() {
		time.Sleep(time.Second)
		s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, NoLog: true, NoSigs: true})
		if err != nil {
			up <- nil
			return
		}
		go s.Start()
		s.ReadyForConnections(10 * time.Second)
		up <- s
	}()
	p := startServeWith(t, "0123456789abcdef0123", "late", "-nats", fmt.Sprintf("nats://127.0.0.1:%d", port), "-node", "late", "-heartbeat", "50ms")
	s := <-up
	if s == nil {
		t.Fatal("the NATS server did not start")
	}
	defer s.Shutdown()
	if !strings.Contains(p.stderr.String(), "waiting for NATS to listen") {
		t.Errorf("the node did not say it waited:\n%s", p.stderr.String())
	}
	if st := status(t, p.url); len(st.Nodes) != 1 || st.Nodes[0].ID != "late" {
		t.Errorf("the node did not join: %+v", st)
	}
}

// TestServeStopsWhileWaitingForNATS: a node told to stop (SIGINT) while
// it waits for its NATS server stops at once, saying so.
func TestServeStopsWhileWaitingForNATS(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close() // nothing listens there
	cmd := exec.Command(tongbuBinary(t), "serve", "-http", "127.0.0.1:0", "-udp", "0", "-loopback",
		"-nats", fmt.Sprintf("nats://127.0.0.1:%d", port), "-node", "early")
	cmd.Env = append(os.Environ(), "TONGBU_SECRET=0123456789abcdef0123")
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer cmd.Process.Kill()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(stderr.String(), "waiting for NATS to listen"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the node did not say it waits for NATS:\n%s", stderr.String())
		}
	}
	cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-exited:
		if err == nil || !strings.Contains(stderr.String(), "stopped while waiting") {
			t.Errorf("exit %v, stderr:\n%s", err, stderr.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("the node went on waiting for NATS 5 s after SIGINT:\n%s", stderr.String())
	}
}
