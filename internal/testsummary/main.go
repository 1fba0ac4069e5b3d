// Command testsummary runs go test with the given arguments and prints what
// a person needs from it: each package's result line, the full output of
// every failed test, and every skipped test with its reason (go test prints
// skips only with -v). It exits with go test's status.
//
//	go run ./internal/testsummary ./...
//	go run ./internal/testsummary -race ./pgwire/
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// event is one line of go test -json (cmd/test2json's TestEvent).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string
}

func main() {
	cmd := exec.Command("go", append([]string{"test", "-json"}, os.Args[1:]...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary: cannot run go test:", err)
		os.Exit(2)
	}
	skips := summarize(out, os.Stdout)
	err = cmd.Wait()
	if skips > 0 {
		fmt.Printf("%d test(s) skipped; the SKIP lines above say why\n", skips)
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		os.Exit(ee.ExitCode())
	case err != nil:
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
}

// summarize reads go test -json events from r and writes the summary to w;
// it returns the number of skipped tests.
func summarize(r io.Reader, w io.Writer) int {
	held := map[string][]string{} // package and test → its output so far
	skips := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			// Not an event (go vet's or the linker's words): pass it on.
			fmt.Fprintln(w, string(line))
			continue
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "build-output":
			fmt.Fprint(w, e.Output)
		case "output":
			if e.Test == "" {
				if keepPackageLine(e.Output) {
					fmt.Fprint(w, e.Output)
				}
				continue
			}
			held[key] = append(held[key], e.Output)
		case "fail":
			if e.Test != "" {
				for _, o := range held[key] {
					if !strings.HasPrefix(o, "=== ") {
						fmt.Fprint(w, o)
					}
				}
			}
			delete(held, key)
		case "skip":
			if e.Test != "" {
				skips++
				fmt.Fprintf(w, "SKIP %s %s:", e.Package, e.Test)
				for _, o := range held[key] {
					if t := strings.TrimSpace(o); t != "" && !strings.HasPrefix(t, "===") && !strings.HasPrefix(t, "--- SKIP") {
						fmt.Fprint(w, " ", t)
					}
				}
				fmt.Fprintln(w)
			}
			delete(held, key)
		case "pass":
			delete(held, key)
		}
	}
	return skips
}

// keepPackageLine reports whether a package-level output line belongs in
// the summary: results and errors, not the verbose run's chatter.
func keepPackageLine(s string) bool {
	t := strings.TrimSpace(s)
	switch {
	case t == "", t == "PASS", t == "FAIL" && !strings.HasPrefix(s, "FAIL\t"), strings.HasPrefix(t, "=== "), strings.HasPrefix(t, "testing: warning: no tests to run"):
		return false
	}
	return true
}
