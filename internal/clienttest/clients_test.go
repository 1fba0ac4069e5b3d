package clienttest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpstat/dpstat/internal/cli"
)

// python is Debian's interpreter, where the python3-* packages install; a
// python3 earlier on PATH may be another one without them.
const python = "/usr/bin/python3"

// debianPython is where Debian's python3-* packages put their modules.
const debianPython = "/usr/lib/python3/dist-packages"

// served is a running dpstat serve shared by the package's tests.
type served struct {
	pgHost, pgPort string
	httpURL        string
	tokens         map[string]string // analyst name → token
	dir            string
}

var (
	serveOnce sync.Once
	srv       *served
	srvErr    error
	stopServe context.CancelFunc
	serveDone chan struct{}
)

func TestMain(m *testing.M) {
	code := m.Run()
	if stopServe != nil {
		stopServe()
		<-serveDone
	}
	if srv != nil {
		os.RemoveAll(srv.dir)
	}
	os.Exit(code)
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// analysts are created before the server starts: alice with a large budget
// on both tables, small with ε = 1 on adult, py for the Python package's
// tests (whose repeated queries must not meet alice's), and an admin.
var analysts = [][]string{
	{"alice", "--table", "adult", "--table", "visits", "--epsilon", "1000", "--delta", "1e-3"},
	{"small", "--table", "adult", "--epsilon", "1"},
	{"py", "--table", "adult", "--epsilon", "1000"},
	{"curator", "--admin"},
}

var (
	httpRE = regexp.MustCompile(`HTTP API and dashboard on (http://[^/\s]+)/`)
	pgRE   = regexp.MustCompile(`PostgreSQL protocol on (\S+) `)
)

// server starts dpstat serve on the example catalog once, in this process,
// on free loopback ports.
func server(t *testing.T) *served {
	t.Helper()
	serveOnce.Do(func() { srv, srvErr = startServer() })
	if srvErr != nil {
		t.Fatalf("starting dpstat serve: %v", srvErr)
	}
	return srv
}

func startServer() (*served, error) {
	dir, err := os.MkdirTemp("", "dpstat-clients-")
	if err != nil {
		return nil, err
	}
	s := &served{dir: dir, tokens: map[string]string{}}
	ledger := filepath.Join(dir, "ledger.db")
	for _, a := range analysts {
		var out, errb bytes.Buffer
		args := append([]string{"analyst", "add"}, a...)
		if code := cli.Execute(append(args, "--ledger", ledger), &out, &errb); code != 0 {
			return nil, fmt.Errorf("dpstat %s: %s", strings.Join(args, " "), errb.String())
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		s.tokens[a[0]] = lines[len(lines)-1]
	}
	catalog, err := filepath.Abs("../../examples/catalog.yaml")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopServe, serveDone = cancel, make(chan struct{})
	out := &syncBuffer{}
	go func() {
		defer close(serveDone)
		cli.ExecuteContext(ctx, []string{"serve", "--catalog", catalog, "--ledger", ledger,
			"--http", "127.0.0.1:0", "--pg", "127.0.0.1:0", "--threads", "1"}, out, out)
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		text := out.String()
		h, p := httpRE.FindStringSubmatch(text), pgRE.FindStringSubmatch(text)
		if h != nil && p != nil && strings.Contains(text, "analysts (") {
			s.httpURL = h[1]
			s.pgHost, s.pgPort, err = net.SplitHostPort(p[1])
			return s, err
		}
		select {
		case <-serveDone:
			return nil, fmt.Errorf("dpstat serve stopped: %s", text)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("dpstat serve did not start in 2 minutes: %s", text)
		}
	}
}

// needPython skips the test unless Debian's python3 has every module. The
// paths it looks at are recorded by go test, so a cached skip is run again
// once the packages are installed.
func needPython(t *testing.T, modules ...string) {
	t.Helper()
	// The Makefile sets DPSTAT_TEST_TOOLS to a fingerprint of the optional
	// tools installed; reading it makes go test's cache key depend on it,
	// so installing a tool reruns a test that skipped without it.
	os.Getenv("DPSTAT_TEST_TOOLS")
	if _, err := os.Stat(python); err != nil {
		t.Skipf("%s is not installed: apt-get install python3", python)
	}
	for _, m := range modules {
		_, err1 := os.Stat(filepath.Join(debianPython, m))
		_, err2 := os.Stat(filepath.Join(debianPython, m+".py"))
		if err1 != nil && err2 != nil {
			t.Skipf("Python module %s is not installed for %s: apt-get install python3-%s", m, python, m)
		}
	}
}

// env is the environment the client scripts read.
func (s *served) env() []string {
	return append(os.Environ(), "DPSTAT_PG_HOST="+s.pgHost, "DPSTAT_PG_PORT="+s.pgPort, "DPSTAT_URL="+s.httpURL,
		"DPSTAT_TOKEN="+s.tokens["alice"], "DPSTAT_SMALL_TOKEN="+s.tokens["small"], "DPSTAT_ADMIN_TOKEN="+s.tokens["curator"],
		"PYTHONDONTWRITEBYTECODE=1")
}

// run runs a client program and fails the test with its output if it
// fails.
func run(t *testing.T, s *served, dir string, name string, args ...string) string {
	t.Helper()
	return runEnv(t, s.env(), dir, name, args...)
}

// runEnv is run with the given environment.
func runEnv(t *testing.T, env []string, dir string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestPythonClients(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		modules []string
	}{
		{"psycopg2, psycopg 3 and pandas", "psycopg_clients.py", []string{"psycopg2", "psycopg", "pandas"}},
		{"SQLAlchemy and its inspector, pandas with an engine", "sqlalchemy_client.py", []string{"sqlalchemy", "psycopg2", "pandas"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			needPython(t, tc.modules...)
			s := server(t)
			out := run(t, s, "testdata", python, tc.script)
			t.Logf("%s", out)
		})
	}
}

func TestJDBC(t *testing.T) {
	const jar = "/usr/share/java/postgresql.jar"
	// The Makefile sets DPSTAT_TEST_TOOLS to a fingerprint of the optional
	// tools installed; reading it makes go test's cache key depend on it,
	// so installing a tool reruns a test that skipped without it.
	os.Getenv("DPSTAT_TEST_TOOLS")
	javac, err := exec.LookPath("javac")
	if _, serr := os.Stat("/usr/bin/javac"); err != nil && serr != nil {
		t.Skip("javac is not installed: apt-get install default-jdk-headless")
	}
	if err != nil {
		javac = "/usr/bin/javac"
	}
	if _, err := os.Stat(jar); err != nil {
		t.Skipf("the PostgreSQL JDBC driver is not installed (%s): apt-get install libpostgresql-jdbc-java", jar)
	}
	s := server(t)
	classes := t.TempDir()
	if out, err := exec.Command(javac, "-d", classes, "testdata/ClientMeta.java").CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	java := filepath.Join(filepath.Dir(javac), "java")
	out := run(t, s, ".", java, "-cp", jar+string(os.PathListSeparator)+classes, "ClientMeta",
		s.pgHost, s.pgPort, s.tokens["alice"], s.tokens["small"])
	t.Logf("%s", out)
}

// TestPythonPackage installs clients/python[pandas] with pip, offline, into a
// fresh virtual environment that sees Debian's packages (pandas), then runs
// the package's tests with it against the server.
func TestPythonPackage(t *testing.T) {
	needPython(t, "pip")
	if m, _ := filepath.Glob("/usr/lib/python3*/ensurepip/__init__.py"); len(m) == 0 {
		t.Skip("Python's venv cannot create environments (no ensurepip): apt-get install python3-venv")
	}
	s := server(t)
	src, err := filepath.Abs("../../clients/python")
	if err != nil {
		t.Fatal(err)
	}
	venv := filepath.Join(t.TempDir(), "venv")
	for _, args := range [][]string{
		{python, "-m", "venv", "--system-site-packages", venv},
		// With the pandas extra, as docs/clients.md says: pip finds the
		// system's pandas, offline.
		{filepath.Join(venv, "bin", "pip"), "install", "--no-index", "--no-cache-dir", "--quiet", src + "[pandas]"},
	} {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = append(os.Environ(), "PIP_DISABLE_PIP_VERSION_CHECK=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// Run from the temporary directory so that dpstat is imported from the
	// installed package, not from the source tree.
	env := append(s.env(), "DPSTAT_TOKEN="+s.tokens["py"])
	out := runEnv(t, env, t.TempDir(), filepath.Join(venv, "bin", "python"), "-m", "unittest", "discover", "-v", "-s", filepath.Join(src, "tests"))
	if !strings.Contains(out, "OK") || strings.Contains(out, "skipped") {
		t.Fatalf("the package's tests did not all run:\n%s", out)
	}
	t.Logf("%s", out)
}

// TestNotebookExample runs examples/notebook.py with the client from the
// source tree: a preview, a query, a plot saved as PNG, the budget left.
func TestNotebookExample(t *testing.T) {
	needPython(t, "matplotlib", "pandas")
	s := server(t)
	src, err := filepath.Abs("../../clients/python")
	if err != nil {
		t.Fatal(err)
	}
	example, err := filepath.Abs("../../examples/notebook.py")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	png := filepath.Join(dir, "plot.png")
	env := append(s.env(), "PYTHONPATH="+src, "DPSTAT_PLOT="+png, "MPLCONFIGDIR="+dir)
	out := runEnv(t, env, dir, python, example)
	for _, want := range []string{"cost ε=0.5", "White", "plot saved", "budget on adult: spent"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("no PNG written (%v)", err)
	}
}
