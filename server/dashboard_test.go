package server_test

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/server"
)

const chromiumPath = "/usr/bin/chromium"

// browser starts headless Chromium for one test, or skips the test when
// Chromium is not installed.
func browser(t *testing.T) context.Context {
	t.Helper()
	// The Makefile sets DPSTAT_TEST_TOOLS to a fingerprint of the optional
	// tools installed; reading it makes go test's cache key depend on it,
	// so installing a tool reruns a test that skipped without it.
	os.Getenv("DPSTAT_TEST_TOOLS")
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("headless Chromium not installed at %s (apt-get install chromium): skipping the dashboard test", chromiumPath)
	}
	// A fresh profile, removed after the browser has exited (Chromium's
	// helper processes may still be writing to it for a moment, which
	// t.TempDir's strict cleanup would report as a failure).
	profile, err := os.MkdirTemp("", "dpstat-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 1000),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() {
		cancelT()
		cancelC()
		cancelA()
		for range 20 {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	return ctx
}

func signIn(url, token string) chromedp.Tasks {
	return chromedp.Tasks{
		chromedp.Navigate(url),
		chromedp.WaitVisible("#token", chromedp.ByQuery),
		chromedp.SendKeys("#token", token, chromedp.ByQuery),
		chromedp.Click(`#signin-form button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible("#app", chromedp.ByQuery),
		chromedp.WaitVisible("#tables li", chromedp.ByQuery),
	}
}

// TestDashboardEndToEnd signs in, previews a query (charging nothing), runs
// it, checks the result table, the chart and the budget, and takes a
// screenshot; then an admin sees the analysts and every release.
func TestDashboardEndToEnd(t *testing.T) {
	e := newEnv(t, server.Options{}, nil)
	if _, err := e.ledger.GrantTotal("adult", accounting.EpsDelta{Epsilon: 100}, accounting.Basic); err != nil {
		t.Fatal(err)
	}
	ctx := browser(t)
	var tables, preview string
	if err := chromedp.Run(ctx,
		signIn(e.ts.URL, e.alice),
		chromedp.Text("#tables", &tables, chromedp.ByQuery),
		chromedp.SetValue("#sql", "SELECT sex, COUNT(*), AVG(age) FROM adult GROUP BY sex", chromedp.ByQuery),
		chromedp.Click("#preview", chromedp.ByQuery),
		chromedp.WaitVisible("#preview-box", chromedp.ByQuery),
		chromedp.Text("#preview-box", &preview, chromedp.ByQuery),
	); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tables, "adult") || strings.Contains(tables, "visits") || !strings.Contains(tables, "[17, 90]") {
		t.Fatalf("tables panel: %q", tables)
	}
	if !strings.Contains(preview, "Nothing was charged") || !strings.Contains(preview, "ε = 0.5") {
		t.Fatalf("preview: %q", preview)
	}
	if n := e.releases(t); n != 0 {
		t.Fatalf("the preview charged %d releases", n)
	}
	var cells, budget, history string
	var bars, whiskers, charts int
	var shot []byte
	if err := chromedp.Run(ctx,
		chromedp.Click("#run", chromedp.ByQuery),
		chromedp.WaitVisible("#result-table tbody tr", chromedp.ByQuery),
		chromedp.WaitVisible("#chart svg", chromedp.ByQuery),
		chromedp.Text("#result-table", &cells, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll('#chart svg rect.barrect').length`, &bars),
		chromedp.Evaluate(`document.querySelectorAll('#chart svg line.err').length`, &whiskers),
		chromedp.Evaluate(`document.querySelectorAll('#chart svg').length`, &charts),
		chromedp.WaitVisible("#history tbody tr", chromedp.ByQuery),
		chromedp.Text("#budgets", &budget, chromedp.ByQuery),
		chromedp.Text("#history", &history, chromedp.ByQuery),
		chromedp.FullScreenshot(&shot, 100),
	); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cells, "Female") || !strings.Contains(cells, "10,771") {
		t.Fatalf("result table: %q", cells)
	}
	// One chart per aggregate, each with a bar and three whisker lines per
	// group.
	if charts != 2 || bars != 4 || whiskers != 12 {
		t.Fatalf("%d charts with %d bars and %d whisker lines, want 2 charts, 4 bars and 12 lines", charts, bars, whiskers)
	}
	if !strings.Contains(budget, "ε 0.5 / 3") || !strings.Contains(budget, "all analysts together: ε 0.5 / 100") {
		t.Fatalf("budget gauge: %q", budget)
	}
	if !strings.Contains(history, "SELECT sex, COUNT(*), AVG(age) FROM adult GROUP BY sex") {
		t.Fatalf("history: %q", history)
	}
	if n := e.releases(t); n != 1 {
		t.Fatalf("%d releases after one run, want 1", n)
	}
	checkScreenshot(t, shot, "dashboard.png")

	// The admin view, in a fresh tab with its own session storage.
	actx, cancel := chromedp.NewContext(ctx)
	defer cancel()
	var analysts, releases string
	var adminShot []byte
	if err := chromedp.Run(actx,
		signIn(e.ts.URL, e.admin),
		chromedp.WaitVisible("#admin", chromedp.ByQuery),
		chromedp.WaitVisible("#analysts tbody tr", chromedp.ByQuery),
		chromedp.WaitVisible("#releases tbody tr", chromedp.ByQuery),
		chromedp.Text("#analysts", &analysts, chromedp.ByQuery),
		chromedp.Text("#releases", &releases, chromedp.ByQuery),
		chromedp.FullScreenshot(&adminShot, 100),
	); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"alice", "bob", "mallory", "revoked", "admin"} {
		if !strings.Contains(analysts, w) {
			t.Errorf("analysts table lacks %q: %q", w, analysts)
		}
	}
	if !strings.Contains(releases, "alice") {
		t.Errorf("releases table: %q", releases)
	}
	checkScreenshot(t, adminShot, "admin.png")

	// A bad token gets a clear message and no session.
	bctx, cancelB := chromedp.NewContext(ctx)
	defer cancelB()
	var msg string
	if err := chromedp.Run(bctx,
		chromedp.Navigate(e.ts.URL),
		chromedp.WaitVisible("#token", chromedp.ByQuery),
		chromedp.SendKeys("#token", "dps_not-a-token", chromedp.ByQuery),
		chromedp.Click(`#signin-form button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible("#signin-error", chromedp.ByQuery),
		chromedp.Poll(`document.getElementById('signin-error').textContent.length > 0`, nil),
		chromedp.Text("#signin-error", &msg, chromedp.ByQuery),
	); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "invalid token") {
		t.Fatalf("bad-token message: %q", msg)
	}
}

// checkScreenshot checks that a screenshot is a PNG of a plausible size
// that is not blank, and saves it in the test's temporary directory (or in
// $DPSTAT_SCREENSHOTS when set, to look at it).
func checkScreenshot(t *testing.T, shot []byte, name string) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	b := img.Bounds()
	if b.Dx() < 1000 || b.Dy() < 600 {
		t.Fatalf("screenshot is %dx%d, want at least 1000x600", b.Dx(), b.Dy())
	}
	colors := map[[3]uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colors[[3]uint32{r >> 12, g >> 12, bl >> 12}] = true
		}
	}
	if len(colors) < 8 {
		t.Fatalf("screenshot looks blank: %d distinct colours", len(colors))
	}
	dir := os.Getenv("DPSTAT_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.WriteFile(filepath.Join(dir, name), shot, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDashboardTablesForTheAnalyst signs in as an analyst who may query
// visits only: the query box starts from visits, a date column's bounds
// are spelt as dates, and the public table is listed, marked public.
func TestDashboardTablesForTheAnalyst(t *testing.T) {
	e := newEnv(t, server.Options{}, nil)
	ctx := browser(t)
	var tables, sql string
	if err := chromedp.Run(ctx,
		signIn(e.ts.URL, e.bob),
		chromedp.Text("#tables", &tables, chromedp.ByQuery),
		chromedp.Value("#sql", &sql, chromedp.ByQuery),
	); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"visits", "date in [2024-01-01, 2024-12-31]", "weekdays", "public · join it to a private table"} {
		if !strings.Contains(tables, want) {
			t.Errorf("tables panel lacks %q: %q", want, tables)
		}
	}
	if strings.Contains(tables, "19,723") || strings.Contains(tables, "adult") {
		t.Errorf("tables panel: %q", tables)
	}
	if sql != "SELECT COUNT(*) FROM visits" {
		t.Errorf("the query box starts with %q, want a query on visits", sql)
	}
}
