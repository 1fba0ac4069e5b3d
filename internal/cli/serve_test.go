package cli

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dpstat/dpstat/ledger"
)

func runServeCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Execute(args, &out, &errb)
	return out.String(), errb.String(), code
}

func lastOutputLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func TestAnalystCommands(t *testing.T) {
	l := filepath.Join(t.TempDir(), "ledger.db")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"add admin", []string{"analyst", "add", "root", "--admin", "--ledger", l}, 0, "added admin \"root\""},
		{"add with grant", []string{"analyst", "add", "alice", "--table", "adult", "--epsilon", "2", "--delta", "1e-6", "--ledger", l}, 0, "granted table \"adult\": epsilon 2"},
		{"add twice", []string{"analyst", "add", "alice", "--ledger", l}, 1, "already exists"},
		{"bad name", []string{"analyst", "add", "a b", "--ledger", l}, 1, "analyst name \"a b\""},
		{"epsilon without table", []string{"analyst", "add", "carol", "--epsilon", "1", "--ledger", l}, 1, "need --table"},
		{"grant", []string{"analyst", "grant", "alice", "--table", "visits", "--epsilon", "1", "--ledger", l}, 0, "granted \"alice\" on table \"visits\""},
		{"grant unknown", []string{"analyst", "grant", "nobody", "--table", "visits", "--epsilon", "1", "--ledger", l}, 1, "no analyst \"nobody\""},
		{"grant negative", []string{"analyst", "grant", "alice", "--table", "adult", "--epsilon", "-1", "--ledger", l}, 1, "epsilon"},
		{"revoke", []string{"analyst", "revoke", "alice", "--ledger", l}, 0, "revoked \"alice\""},
		{"list", []string{"analyst", "list", "--ledger", l}, 0, "revoked"},
		{"rotate", []string{"analyst", "rotate", "alice", "--ledger", l}, 0, "dps_"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runServeCLI(t, tc.args...)
			if code != tc.wantCode || !strings.Contains(out+errOut, tc.want) {
				t.Fatalf("exit %d, want %d; output lacks %q:\n%s%s", code, tc.wantCode, tc.want, out, errOut)
			}
		})
	}
	out, _, _ := runServeCLI(t, "analyst", "add", "dave", "--json", "--table", "adult", "--epsilon", "1.5", "--ledger", l)
	var added struct {
		Name, Role, Token string
		Grants            []struct {
			Table   string
			Epsilon float64
		}
	}
	if err := json.Unmarshal([]byte(out), &added); err != nil || added.Name != "dave" || !strings.HasPrefix(added.Token, "dps_") ||
		len(added.Grants) != 1 || added.Grants[0].Table != "adult" || added.Grants[0].Epsilon != 1.5 {
		t.Fatalf("add --json: %v\n%s", err, out)
	}
	out, _, _ = runServeCLI(t, "analyst", "list", "--json", "--ledger", l)
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 3 {
		t.Fatalf("list --json: %v\n%s", err, out)
	}
	if strings.Contains(out, "token") {
		t.Fatalf("list shows token material:\n%s", out)
	}
}

// TestServe starts dpstat serve on the example catalog, answers a query
// over HTTP, shuts down on cancellation and leaves the charge in the
// ledger, which is closed afterwards.
func TestServe(t *testing.T) {
	l := filepath.Join(t.TempDir(), "ledger.db")
	out, _, code := runServeCLI(t, "analyst", "add", "alice", "--table", "adult", "--epsilon", "3", "--ledger", l)
	if code != 0 {
		t.Fatal(out)
	}
	tok := lastOutputLine(out)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs := make(chan [2]string, 1)
	done := make(chan error, 1)
	var log bytes.Buffer
	go func() {
		done <- runServe(ctx, serveConfig{
			catalog: filepath.Join("..", "..", "examples", "catalog.yaml"), ledger: l,
			httpAddr: "127.0.0.1:0", pgAddr: "127.0.0.1:0", maxConns: 4, maxConcurrent: 8, maxSQL: 4096,
			queryTimeout: 10 * time.Second, shutdownTimeout: 5 * time.Second, loadTables: true, threads: 1,
		}, &log, func(h, p string) { addrs <- [2]string{h, p} })
	}()
	var a [2]string
	select {
	case a = <-addrs:
	case err := <-done:
		t.Fatalf("serve stopped: %v\n%s", err, log.String())
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not start")
	}
	req, _ := http.NewRequest("POST", "http://"+a[0]+"/v1/query", strings.NewReader(`{"sql":"SELECT COUNT(*) FROM adult","epsilon":0.5}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("query: %d", resp.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not shut down")
	}
	if !strings.Contains(log.String(), "stopped") {
		t.Fatalf("log: %s", log.String())
	}
	led, err := ledger.Open(l, ledger.Options{Timeout: time.Second})
	if err != nil {
		t.Fatalf("ledger still held after shutdown: %v", err)
	}
	defer led.Close()
	st, err := led.Status(ledger.Key{Dataset: "adult", Analyst: "alice"})
	if err != nil || st.Spent.Epsilon != 0.5 {
		t.Fatalf("after shutdown: %+v %v", st, err)
	}
}

func TestServeFlagsRefused(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no catalog", []string{"serve"}, "--catalog is required"},
		{"no listeners", []string{"serve", "--catalog", "x.yaml", "--http", "", "--pg", ""}, "give at least one address"},
		{"half TLS", []string{"serve", "--catalog", "x.yaml", "--tls-cert", "c.pem"}, "go together"},
		{"negative max-conns", []string{"serve", "--catalog", "x.yaml", "--max-conns", "-1"}, "--max-conns -1: want a whole number >= 1"},
		{"zero max-concurrent", []string{"serve", "--catalog", "x.yaml", "--max-concurrent", "0"}, "--max-concurrent 0"},
		{"negative threads", []string{"serve", "--catalog", "x.yaml", "--threads", "-2"}, "--threads -2"},
		{"negative query timeout", []string{"serve", "--catalog", "x.yaml", "--query-timeout", "-1s"}, "--query-timeout -1s: want a positive duration"},
		{"zero repeat wait", []string{"serve", "--catalog", "x.yaml", "--repeat-wait", "0s"}, "--repeat-wait 0s: want a positive duration"},
		{"negative repeat wait", []string{"serve", "--catalog", "x.yaml", "--repeat-wait", "-1s"}, "--repeat-wait -1s: want a positive duration"},
		{"NaN rate", []string{"serve", "--catalog", "x.yaml", "--rate", "NaN"}, "--rate NaN"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := runServeCLI(t, tc.args...)
			if code == 0 || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d: %s", code, errOut)
			}
		})
	}
}

// TestServeTLS serves HTTPS and PostgreSQL TLS from one certificate.
func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeSelfSigned(t, certFile, keyFile)
	l := filepath.Join(dir, "ledger.db")
	out, _, code := runServeCLI(t, "analyst", "add", "alice", "--table", "adult", "--epsilon", "3", "--ledger", l)
	if code != 0 {
		t.Fatal(out)
	}
	tok := lastOutputLine(out)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, serveConfig{
			catalog: filepath.Join("..", "..", "examples", "catalog.yaml"), ledger: l,
			httpAddr: "127.0.0.1:0", pgAddr: "127.0.0.1:0", tlsCert: certFile, tlsKey: keyFile,
			maxConns: 4, maxConcurrent: 8, maxSQL: 4096, queryTimeout: 10 * time.Second,
			shutdownTimeout: 5 * time.Second, loadTables: true, threads: 1,
		}, io.Discard, func(h, p string) { addrs <- [2]string{h, p} })
	}()
	var a [2]string
	select {
	case a = <-addrs:
	case err := <-done:
		t.Fatalf("serve stopped: %v", err)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	req, _ := http.NewRequest("GET", "https://"+a[0]+"/v1/tables", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil {
		t.Fatalf("HTTPS: %d, TLS %v", resp.StatusCode, resp.TLS != nil)
	}
	host, port, _ := net.SplitHostPort(a[1])
	c, err := pgx.Connect(ctx, "host="+host+" port="+port+" user=alice password="+tok+" sslmode=require")
	if err != nil {
		t.Fatal(err)
	}
	var v string
	if err := c.QueryRow(ctx, "SHOW dpstat.epsilon").Scan(&v); err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)
	if _, err := pgx.Connect(ctx, "host="+host+" port="+port+" user=alice password="+tok+" sslmode=disable"); err == nil {
		t.Fatal("plaintext PostgreSQL login accepted with TLS configured")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func writeSelfSigned(t *testing.T, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:8080", true}, {"[::1]:5433", true}, {"localhost:80", true}, {"127.3.4.5:1", true},
		{"0.0.0.0:8080", false}, {"[::]:8080", false}, {":8080", false}, {"192.168.1.4:8080", false}, {"example.com:80", false},
	} {
		if got := loopback(tc.addr); got != tc.want {
			t.Errorf("loopback(%q) = %v, want %v", tc.addr, got, tc.want)
		}
	}
}

// TestServeWarnsWithoutTLS: listening beyond loopback without TLS is
// warned about, on loopback it is not; with TLS every response carries
// HSTS.
func TestServeWarnsWithoutTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeSelfSigned(t, certFile, keyFile)
	tests := []struct {
		name          string
		httpAddr      string
		tls           bool
		warn, hsts    bool
		scheme, local string
	}{
		{"loopback", "127.0.0.1:0", false, false, false, "http", "127.0.0.1"},
		{"every interface", "0.0.0.0:0", false, true, false, "http", "127.0.0.1"},
		{"every interface with TLS", "0.0.0.0:0", true, false, true, "https", "127.0.0.1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := serveConfig{
				catalog: filepath.Join("..", "..", "examples", "catalog.yaml"), ledger: filepath.Join(t.TempDir(), "l.db"),
				httpAddr: tc.httpAddr, maxConns: 4, maxConcurrent: 8, maxSQL: 4096, queryTimeout: 10 * time.Second,
				shutdownTimeout: 5 * time.Second, loadTables: false, threads: 1,
			}
			if tc.tls {
				cfg.tlsCert, cfg.tlsKey = certFile, keyFile
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			addrs := make(chan string, 1)
			done := make(chan error, 1)
			var log bytes.Buffer
			go func() { done <- runServe(ctx, cfg, &log, func(h, _ string) { addrs <- h }) }()
			var addr string
			select {
			case addr = <-addrs:
			case err := <-done:
				t.Fatalf("serve stopped: %v", err)
			}
			_, port, _ := net.SplitHostPort(addr)
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
			resp, err := client.Get(tc.scheme + "://" + net.JoinHostPort(tc.local, port) + "/openapi.json")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := resp.Header.Get("Strict-Transport-Security"); (got != "") != tc.hsts {
				t.Errorf("Strict-Transport-Security = %q, want it sent = %v", got, tc.hsts)
			}
			cancel()
			<-done
			if warned := strings.Contains(log.String(), "WARNING: --http"); warned != tc.warn {
				t.Errorf("warned = %v, want %v:\n%s", warned, tc.warn, log.String())
			}
		})
	}
}
