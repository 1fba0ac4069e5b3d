package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
)

// newServeLogger returns dpstat serve's structured logger, writing text
// (the default) or JSON lines to w, with every connection string and
// password in a message or attribute replaced by [redacted]: the given
// secrets (the catalog's DSN, the database password) wherever they
// appear, any URL's user and host part, and password=... pairs.
func newServeLogger(w io.Writer, format string, secrets ...string) (*slog.Logger, error) {
	var h slog.Handler
	switch format {
	case "", "text":
		h = slog.NewTextHandler(w, nil)
	case "json":
		h = slog.NewJSONHandler(w, nil)
	default:
		return nil, fmt.Errorf("--log-format %q: want text or json", format)
	}
	var keep []string
	for _, s := range secrets {
		if s != "" {
			keep = append(keep, s)
		}
	}
	return slog.New(&redactHandler{h: h, secrets: keep}), nil
}

var (
	// urlRE matches a URL with an authority (scheme://user:pass@host/...).
	urlRE = regexp.MustCompile(`\b([a-zA-Z][a-zA-Z0-9+.-]*)://[^\s"'<>]+`)
	// passwordRE matches key=value passwords of libpq-style strings.
	passwordRE = regexp.MustCompile(`(?i)\b(password|passwd|pwd)\s*=\s*('[^']*'|"[^"]*"|\S+)`)
)

// redact removes connection strings and passwords from s.
func redact(s string, secrets []string) string {
	for _, sec := range secrets {
		s = strings.ReplaceAll(s, sec, "[redacted]")
	}
	s = urlRE.ReplaceAllString(s, "$1://[redacted]")
	return passwordRE.ReplaceAllString(s, "$1=[redacted]")
}

// redactHandler redacts messages and string attributes before its handler
// writes them.
type redactHandler struct {
	h       slog.Handler
	secrets []string
}

func (r *redactHandler) Enabled(ctx context.Context, l slog.Level) bool { return r.h.Enabled(ctx, l) }

func (r *redactHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, redact(rec.Message, r.secrets), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(r.attr(a))
		return true
	})
	return r.h.Handle(ctx, out)
}

func (r *redactHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, redact(v.String(), r.secrets))
	case slog.KindGroup:
		g := v.Group()
		out := make([]any, len(g))
		for i, x := range g {
			out[i] = r.attr(x)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, redact(err.Error(), r.secrets))
		}
		return slog.String(a.Key, redact(v.String(), r.secrets))
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func (r *redactHandler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = r.attr(a)
	}
	return &redactHandler{h: r.h.WithAttrs(out), secrets: r.secrets}
}

func (r *redactHandler) WithGroup(name string) slog.Handler {
	return &redactHandler{h: r.h.WithGroup(name), secrets: r.secrets}
}
