package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	events := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:9: chatter\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"=== RUN   TestB\n"}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:5: chromium not installed: apt-get install chromium\n"}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"--- SKIP: TestB (0.00s)\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestB"}`,
		`{"Action":"output","Package":"p","Test":"TestC","Output":"=== RUN   TestC\n"}`,
		`{"Action":"output","Package":"p","Test":"TestC","Output":"    c_test.go:7: got 1, want 2\n"}`,
		`{"Action":"output","Package":"p","Test":"TestC","Output":"--- FAIL: TestC (0.00s)\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestC"}`,
		`{"Action":"output","Package":"p","Output":"FAIL\n"}`,
		`{"Action":"output","Package":"p","Output":"FAIL\tp\t0.01s\n"}`,
		`{"Action":"output","Package":"q","Output":"ok  \tq\t(cached)\n"}`,
		`not JSON: a vet message`,
	}, "\n")
	var out bytes.Buffer
	skips := summarize(strings.NewReader(events), &out)
	want := "SKIP p TestB: b_test.go:5: chromium not installed: apt-get install chromium\n" +
		"    c_test.go:7: got 1, want 2\n--- FAIL: TestC (0.00s)\n" +
		"FAIL\tp\t0.01s\nok  \tq\t(cached)\nnot JSON: a vet message\n"
	if skips != 1 || out.String() != want {
		t.Fatalf("skips = %d, output:\n%s\nwant:\n%s", skips, out.String(), want)
	}
}
