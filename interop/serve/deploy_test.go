//go:build !js

package serve_test

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/tongbu/tongbu/interop/natstest"
)

// TestDeployFiles checks the repository's Dockerfile and compose.yaml
// without Docker: the Dockerfile's build command builds from the files
// the image would get, its Go is new enough, its default command serves,
// and each compose node's command runs as a cluster node on a real NATS
// server with its ports published as the server advertises them.
func TestDeployFiles(t *testing.T) {
	root := filepath.Join("..", "..")
	t.Run("Dockerfile", func(t *testing.T) { checkDockerfile(t, root) })
	t.Run("compose", func(t *testing.T) { checkCompose(t, root) })
}

// dockerfile is what the test reads of a Dockerfile.
type dockerfile struct {
	from    []string          // images of FROM lines
	env     map[string]string // ENV of the build stage
	copies  []string          // sources of COPY lines not --from a stage
	run     []string          // RUN commands
	expose  []string
	command []string // ENTRYPOINT then CMD, exec form
}

func readDockerfile(t *testing.T, path string) dockerfile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := dockerfile{env: map[string]string{}}
	var entry, cmd []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		args := strings.TrimSpace(strings.TrimPrefix(line, f[0]))
		switch strings.ToUpper(f[0]) {
		case "FROM":
			d.from = append(d.from, f[1])
		case "ENV":
			for _, kv := range f[1:] {
				k, v, _ := strings.Cut(kv, "=")
				d.env[k] = v
			}
		case "COPY":
			if !strings.HasPrefix(f[1], "--from") {
				d.copies = append(d.copies, f[1:len(f)-1]...)
			}
		case "RUN":
			d.run = append(d.run, args)
		case "EXPOSE":
			d.expose = append(d.expose, f[1:]...)
		case "ENTRYPOINT":
			entry = execForm(t, args)
		case "CMD":
			cmd = execForm(t, args)
		}
	}
	d.command = append(entry, cmd...)
	return d
}

// execForm parses ["a", "b"].
func execForm(t *testing.T, s string) []string {
	var v []string
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: want the exec form, [\"...\"]: %v", s, err)
	}
	return v
}

func checkDockerfile(t *testing.T, root string) {
	d := readDockerfile(t, filepath.Join(root, "Dockerfile"))
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(mustRead(t, filepath.Join(root, "go.mod")))
	builder := regexp.MustCompile(`^golang:(\d+\.\d+)`).FindStringSubmatch(d.from[0])
	if goVersion == nil || builder == nil || versionLess(builder[1], goVersion[1]) {
		t.Fatalf("the build stage's %s is older than go.mod's go %v", d.from[0], goVersion)
	}
	ignored := dockerIgnored(t, root)
	for _, c := range d.copies {
		if _, err := os.Stat(filepath.Join(root, c)); err != nil {
			t.Errorf("COPY %s: %v", c, err)
		}
	}
	// The library's packages that cmd/tongbu builds from must reach the
	// image: none may sit under a path .dockerignore leaves out.
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.Dir}}{{end}}", "github.com/tongbu/tongbu/cmd/tongbu").Output()
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(root)
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(abs, dir)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue // a dependency's, downloaded by go mod download
		}
		for _, ig := range ignored {
			if rel == ig || strings.HasPrefix(rel, ig+string(filepath.Separator)) {
				t.Errorf("cmd/tongbu builds from %s, which .dockerignore leaves out (%s)", rel, ig)
			}
		}
	}
	// The build stage's last RUN builds the binary: run it here, with the
	// stage's environment, into a temporary directory. Without -trimpath
	// and with cgo as the host has it, so that it is built from the test
	// run's cache (the two rebuild every package: minutes on a small
	// machine); go list checks that every package builds without cgo.
	bin := filepath.Join(t.TempDir(), "tongbu")
	build := strings.ReplaceAll(d.run[len(d.run)-1], "/out/tongbu", bin)
	build = strings.ReplaceAll(build, " -trimpath", "")
	env := os.Environ()
	for k, v := range d.env {
		if k != "CGO_ENABLED" {
			env = append(env, k+"="+v)
		}
	}
	cmd := exec.Command("sh", "-c", build)
	cmd.Dir, cmd.Env = root, env
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("RUN %s: %v\n%s", build, err, b)
	}
	list := exec.Command("go", "list", "-deps", "-e", "-f", "{{with .Error}}{{.}}{{end}}{{range .DepsErrors}}{{.}}{{end}}", "./cmd/tongbu")
	list.Dir, list.Env = root, append(env, "CGO_ENABLED="+d.env["CGO_ENABLED"])
	if b, err := list.CombinedOutput(); err != nil || strings.TrimSpace(string(b)) != "" {
		t.Fatalf("cmd/tongbu with the image's environment: %v\n%s", err, b)
	}
	for _, want := range []string{"8080/tcp", "3478/udp"} {
		if !slices.Contains(d.expose, want) {
			t.Errorf("EXPOSE %v lacks %s, tongbu serve's default", d.expose, want)
		}
	}
	if len(d.command) < 2 || filepath.Base(d.command[0]) != "tongbu" || d.command[1] != "serve" {
		t.Fatalf("ENTRYPOINT and CMD %v: want tongbu serve", d.command)
	}
	// The image's default command serves (on free loopback ports here).
	serve := exec.Command(bin, append(d.command[1:], "-http", "127.0.0.1:0", "-udp", "0", "-hugepages=false")...)
	serve.Env = append(os.Environ(), "TONGBU_SECRET=0123456789abcdef0123")
	stdout, _ := serve.StdoutPipe()
	var stderr lockedBuffer
	serve.Stderr = &stderr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { serve.Process.Kill(); serve.Wait() }()
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "tongbu serve: http://") {
		t.Fatalf("the image's command printed %q\n%s", sc.Text(), stderr.String())
	}
	go io.Copy(io.Discard, stdout)
	url := strings.Fields(strings.TrimPrefix(sc.Text(), "tongbu serve: "))[0]
	resp, err := http.Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// dockerIgnored lists .dockerignore's plain paths.
func dockerIgnored(t *testing.T, root string) []string {
	var paths []string
	for _, l := range strings.Split(mustRead(t, filepath.Join(root, ".dockerignore")), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") && !strings.ContainsAny(l, "*?!") {
			paths = append(paths, filepath.Clean(l))
		}
	}
	return paths
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// versionLess compares "1.25" and "1.26".
func versionLess(a, b string) bool {
	var am, an, bm, bn int
	fmtSscan(a, &am, &an)
	fmtSscan(b, &bm, &bn)
	return am < bm || am == bm && an < bn
}

func fmtSscan(s string, major, minor *int) {
	maj, min, _ := strings.Cut(s, ".")
	*major, *minor = atoiOr0(maj), atoiOr0(min)
}

func atoiOr0(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return n
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// composeFile is what the test reads of compose.yaml.
type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Build       string            `yaml:"build"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Ports       []string          `yaml:"ports"`
		DependsOn   []string          `yaml:"depends_on"`
	} `yaml:"services"`
}

// expand substitutes ${VAR:-default} and ${VAR:?message} as compose does,
// from vars.
func expand(s string, vars map[string]string) string {
	return regexp.MustCompile(`\$\{(\w+)(?::[-?]([^}]*))?\}`).ReplaceAllStringFunc(s, func(m string) string {
		sub := regexp.MustCompile(`\$\{(\w+)(?::([-?])([^}]*))?\}`).FindStringSubmatch(m)
		if v, ok := vars[sub[1]]; ok {
			return v
		}
		if sub[2] == "-" {
			return sub[3]
		}
		return ""
	})
}

// flagValue returns the value after flag name in args.
func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func checkCompose(t *testing.T, root string) {
	var cf composeFile
	if err := yaml.Unmarshal([]byte(mustRead(t, filepath.Join(root, "compose.yaml"))), &cf); err != nil {
		t.Fatal(err)
	}
	// A NATS cluster of three, with JetStream for the worlds' checkpoints.
	natsServices := []string{"nats-1", "nats-2", "nats-3"}
	var natsURLs []string
	for _, name := range natsServices {
		svc, ok := cf.Services[name]
		if !ok || !strings.HasPrefix(svc.Image, "nats:") {
			t.Fatalf("compose.yaml has no NATS service %s (image %q)", name, svc.Image)
		}
		cmd := strings.Join(svc.Command, " ")
		if !strings.Contains(cmd, "-js") || flagValue(svc.Command, "--name") != name ||
			flagValue(svc.Command, "-routes") != "nats://nats-1:6222,nats://nats-2:6222,nats://nats-3:6222" {
			t.Errorf("%s: command %q: want JetStream, its name, and routes to all three", name, cmd)
		}
		natsURLs = append(natsURLs, "nats://"+name+":4222")
	}
	ns := natstest.Cluster(t, 3)
	const secret = "a-compose-secret-of-16-bytes"
	vars := map[string]string{"TONGBU_SECRET": secret}
	var nodes []string
	procs := map[string]*serveProc{}
	for name, svc := range cf.Services {
		if svc.Build == "" {
			continue
		}
		nodes = append(nodes, name)
		if !strings.Contains(svc.Environment["TONGBU_SECRET"], "${TONGBU_SECRET:?") {
			t.Errorf("%s: TONGBU_SECRET should come from the environment, required: %q", name, svc.Environment["TONGBU_SECRET"])
		}
		args := make([]string, len(svc.Command))
		for i, a := range svc.Command {
			args[i] = expand(a, vars)
		}
		// Published as advertised: the UDP port maps to itself, and the
		// HTTP port is the container's side of a TCP mapping.
		udp, httpPort := flagValue(args, "-udp"), strings.TrimPrefix(flagValue(args, "-http"), ":")
		if !slices.Contains(svc.Ports, udp+":"+udp+"/udp") {
			t.Errorf("%s: -udp %s is not published as %s:%s/udp (ports %v): the address the server advertises would not reach it", name, udp, udp, udp, svc.Ports)
		}
		if !slices.ContainsFunc(svc.Ports, func(p string) bool { return strings.HasSuffix(p, ":"+httpPort+"/tcp") }) {
			t.Errorf("%s: -http port %s is not published (ports %v)", name, httpPort, svc.Ports)
		}
		if nats := flagValue(args, "-nats"); nats != strings.Join(natsURLs, ",") || !slices.Equal(svc.DependsOn, natsServices) {
			t.Errorf("%s: -nats %s, depends_on %v: want the three NATS servers", name, nats, svc.DependsOn)
		}
		if flagValue(args, "-checkpoint-replicas") != "3" {
			t.Errorf("%s: -checkpoint-replicas %q: want 3, one a NATS server", name, flagValue(args, "-checkpoint-replicas"))
		}
		// Run the command on this machine: loopback ports, the test's NATS.
		for i := 1; i < len(args); i++ {
			switch args[i-1] {
			case "-http":
				args[i] = "127.0.0.1:0"
			case "-udp":
				args[i] = "0"
			case "-nats":
				args[i] = natstest.URLs(ns)
			}
		}
		procs[name] = startServeWith(t, secret, name, append(args, "-heartbeat", "50ms")...)
	}
	slices.Sort(nodes)
	if len(nodes) < 2 {
		t.Fatalf("compose.yaml runs %d tongbu nodes, want a cluster of two or more", len(nodes))
	}
	for name, p := range procs {
		waitUntil(t, name+" to see every node", func() bool {
			var ids []string
			for _, n := range status(t, p.url).Nodes {
				if n.Alive {
					ids = append(ids, n.ID)
				}
			}
			return slices.Equal(ids, nodes)
		})
	}
	// The nodes made the checkpoint bucket, replicated on the three.
	js, err := jetstream.New(natstest.Conn(t, ns[0]))
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the checkpoint bucket", func() bool {
		kv, err := js.KeyValue(t.Context(), "tongbu_cluster_worlds")
		if err != nil {
			return false
		}
		st, err := kv.Status(t.Context())
		bs, ok := st.(*jetstream.KeyValueBucketStatus)
		return err == nil && ok && bs.StreamInfo().Config.Replicas == 3
	})
}
