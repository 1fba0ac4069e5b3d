package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/dpstat/dpstat/collector"
)

type collectOptions struct {
	store     string
	addr      string
	tokenFile string
	maxBody   int64
	maxBatch  int
	perAddr   int
	maxIDs    int
	demo      bool
}

func newCollectCmd() *cobra.Command {
	var o collectOptions
	cmd := &cobra.Command{
		Use:   "collect --store PATH [--http 127.0.0.1:8090]",
		Short: "Run the collector of locally private survey reports",
		Long: `Run the collector: an HTTP service where a curator creates surveys, devices
fetch a survey's public parameters and post randomized reports, and anyone
reads the estimates with intervals. Reports are committed to the store (fsync)
before they are acknowledged.

The curator's token is read from --admin-token-file FILE (default: the store's
path with .token appended), or, if FILE does not exist, a new token is
generated and written to it (mode 0600); the store keeps only its SHA-256. To
replace a lost token, delete the file and restart.

--demo creates a demo survey on the page (how people get to work, ε = 1) when
the store has no survey yet.

Endpoints:
  GET  /                            demo page (answer a survey, see the estimates)
  GET  /dpstat-ldp.mjs              the JavaScript client
  GET  /api/surveys                 surveys
  POST /api/surveys                 create (Authorization: Bearer TOKEN)
  GET  /api/surveys/ID              public parameters, with exact probabilities
  POST /api/surveys/ID/devices      enrol devices (Authorization: Bearer TOKEN): {"count": n}
  POST /api/surveys/ID/reports      {"reports": [{"id": ..., "value": ...}, ...]}
                                    (a survey created with "enrolment": true takes one report
                                    per enrolled device: Authorization: Bearer DEVICE-TOKEN)
  GET  /api/surveys/ID/estimates    estimates with intervals (?confidence=0.95)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runCollect(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.store, "store", "", "collector store file, created if missing (required)")
	f.StringVar(&o.addr, "http", "127.0.0.1:8090", "address to listen on")
	f.StringVar(&o.tokenFile, "admin-token-file", "", "file holding the curator's token, created with a new token if missing (default: the store's path with .token appended)")
	f.BoolVar(&o.demo, "demo", false, "create a demo survey when the store has none")
	f.Int64Var(&o.maxBody, "max-body", collector.DefaultMaxBody, "largest request body, in bytes")
	f.IntVar(&o.maxBatch, "max-batch", collector.DefaultMaxBatch, "most reports in one request")
	f.IntVar(&o.perAddr, "max-reports-per-addr", 0, "most reports one client address (IPv6: its /64) may post to one survey per hour (0: no quota; behind a proxy every client shares its address)")
	f.IntVar(&o.maxIDs, "max-ids", collector.DefaultMaxIDs, "most report ids held in memory to find duplicates, over all surveys (about 60 bytes each); beyond, reports are refused (503)")
	return cmd
}

// setupToken makes sure the store has a curator token, kept in file, and
// tells the operator where it is.
func setupToken(st *collector.Store, file string, stderr io.Writer) error {
	b, err := os.ReadFile(file)
	switch {
	case err == nil:
		tok := strings.TrimSpace(string(b))
		if err := st.SetAdminToken(tok); err != nil {
			return fmt.Errorf("--admin-token-file %s: %w", file, err)
		}
		fmt.Fprintf(stderr, "curator token read from %s\n", file)
		return nil
	case errors.Is(err, os.ErrNotExist):
		tok, err := collector.NewToken()
		if err != nil {
			return err
		}
		if err := os.WriteFile(file, []byte(tok+"\n"), 0o600); err != nil {
			return fmt.Errorf("--admin-token-file %s: %w", file, err)
		}
		if err := st.SetAdminToken(tok); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "new curator token written to %s (readable only by you)\n", file)
		return nil
	}
	return fmt.Errorf("--admin-token-file %s: %w", file, err)
}

func runCollect(ctx context.Context, stdout, stderr io.Writer, o collectOptions) error {
	if o.store == "" {
		return errors.New("--store is required: the collector's store file (created if missing)")
	}
	if o.maxBody < 1024 {
		return fmt.Errorf("--max-body = %d: want at least 1024 bytes", o.maxBody)
	}
	if o.maxBatch < 1 {
		return fmt.Errorf("--max-batch = %d: want at least 1", o.maxBatch)
	}
	if o.perAddr < 0 {
		return fmt.Errorf("--max-reports-per-addr = %d: want >= 0 (0: no quota)", o.perAddr)
	}
	if o.maxIDs < 0 {
		return fmt.Errorf("--max-ids = %d: want >= 1 (or 0 for the default %d)", o.maxIDs, collector.DefaultMaxIDs)
	}
	st, err := collector.Open(o.store, collector.StoreOptions{MaxIDs: o.maxIDs})
	if err != nil {
		return err
	}
	defer st.Close()
	if o.tokenFile == "" {
		o.tokenFile = o.store + ".token"
	}
	if err := setupToken(st, o.tokenFile, stderr); err != nil {
		return err
	}
	if o.demo && len(st.Surveys()) == 0 {
		sv, err := st.CreateSurvey(collector.SurveySpec{
			ID:        "commute",
			Question:  "How do you usually get to work or school?",
			Domain:    collector.Domain{Values: []string{"car", "public transport", "bicycle", "on foot", "I work from home"}},
			Mechanism: "auto",
			Epsilon:   1,
		})
		if err != nil {
			return fmt.Errorf("creating the demo survey: %w", err)
		}
		fmt.Fprintf(stderr, "demo survey %q created: %s\n", sv.ID, sv.Question)
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("--http %s: %w", o.addr, err)
	}
	srv := &http.Server{
		Handler:           collector.Handler(st, collector.ServerOptions{MaxBody: o.maxBody, MaxBatch: o.maxBatch, MaxReportsPerAddr: o.perAddr}),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	fmt.Fprintf(stdout, "collector listening on http://%s/ (store %s)\n", ln.Addr(), o.store)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	}
}
