package collector

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/dpstat/dpstat/ldp"
	"github.com/dpstat/dpstat/random"
)

// Client is the Go device-side client of a collector: it fetches a survey's
// public parameters, randomizes answers locally with package ldp (checking
// that its probabilities are exactly the ones the collector publishes), and
// posts the reports. It is safe for concurrent use.
type Client struct {
	base string
	http *http.Client
}

// NewClient returns a client of the collector at base (e.g.
// "http://127.0.0.1:8090"); hc nil means http.DefaultClient.
func NewClient(base string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("collector address %q: want an http:// or https:// URL", base)
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: strings.TrimRight(base, "/"), http: hc}, nil
}

// Device answers one survey: it holds the survey's public parameters and the
// matching local randomizer.
type Device struct {
	c *Client
	// Public is the survey's public parameters as the collector sent them.
	Public Public
	oracle ldp.FrequencyOracle
	mean   *ldp.Mean
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return err
	}
	if res.StatusCode/100 != 2 {
		var e errorBody
		if json.Unmarshal(raw, &e) == nil && e.Error.Code != "" {
			return fmt.Errorf("collector: %s: %s", e.Error.Code, e.Error.Message)
		}
		return fmt.Errorf("collector: HTTP %d", res.StatusCode)
	}
	return json.Unmarshal(raw, out)
}

// Survey fetches a survey's public parameters and builds the randomizer,
// refusing parameters that differ from what package ldp computes.
func (c *Client) Survey(ctx context.Context, id string) (*Device, error) {
	var p Public
	if err := c.do(ctx, "GET", "/api/surveys/"+url.PathEscape(id), nil, &p); err != nil {
		return nil, err
	}
	d := &Device{c: c, Public: p}
	var got ldp.Params
	if p.Mechanism == ldp.KindMean {
		if len(p.Domain.Range) != 2 {
			return nil, fmt.Errorf("collector: mean survey %q without a range", id)
		}
		m, err := ldp.NewMean(ldp.MeanOptions{Epsilon: p.Epsilon, Lo: p.Domain.Range[0], Hi: p.Domain.Range[1]})
		if err != nil {
			return nil, err
		}
		d.mean, got = m, m.Params()
	} else {
		o, err := ldp.New(ldp.Options{Mechanism: p.Mechanism, Epsilon: p.Epsilon, Domain: p.Params.Domain})
		if err != nil {
			return nil, err
		}
		d.oracle, got = o, o.Params()
	}
	if got.P != p.Params.P || got.Q != p.Params.Q || got.G != p.Params.G || got.Epsilon != p.Params.Epsilon {
		return nil, fmt.Errorf("collector: survey %q publishes p = %s, q = %s, g = %d but this client computes p = %s, q = %s, g = %d: refusing to randomize with other probabilities", id, p.Params.P.Hex, p.Params.Q.Hex, p.Params.G, got.P.Hex, got.Q.Hex, got.G)
	}
	return d, nil
}

// NewReportID returns a random 128-bit report id in hex.
func NewReportID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Randomize returns the wire report of the answer with index v (or, for a
// mean survey, use RandomizeNumber), with a fresh random report id; src nil
// means the secure source.
func (d *Device) Randomize(src random.Source, v int) (Report, error) {
	if d.oracle == nil {
		return Report{}, fmt.Errorf("survey %q asks for a number: use RandomizeNumber", d.Public.ID)
	}
	r, err := d.oracle.Randomize(src, v)
	if err != nil {
		return Report{}, err
	}
	return wire(NewReportID(), r, d.Public.Params), nil
}

// RandomizeNumber returns the wire report of x for a mean survey.
func (d *Device) RandomizeNumber(src random.Source, x float64) (Report, error) {
	if d.mean == nil {
		return Report{}, fmt.Errorf("survey %q asks for one of its values: use Randomize", d.Public.ID)
	}
	r, err := d.mean.Randomize(src, x)
	if err != nil {
		return Report{}, err
	}
	return wire(NewReportID(), r, d.Public.Params), nil
}

// Post sends reports (a batch) to the survey.
func (d *Device) Post(ctx context.Context, reports []Report) (IngestResult, error) {
	var res IngestResult
	err := d.c.do(ctx, "POST", "/api/surveys/"+url.PathEscape(d.Public.ID)+"/reports", map[string]any{"reports": reports}, &res)
	return res, err
}

// Estimates fetches the survey's estimates.
func (c *Client) Estimates(ctx context.Context, id string, confidence float64) (EstimateResult, error) {
	var r EstimateResult
	err := c.do(ctx, "GET", fmt.Sprintf("/api/surveys/%s/estimates?confidence=%v", url.PathEscape(id), confidence), nil, &r)
	return r, err
}

// wire turns an ldp report into the JSON report a device posts.
func wire(id string, r ldp.Report, p ldp.Params) Report {
	switch p.Mechanism {
	case ldp.KindOUE, ldp.KindSUE:
		b := make([]byte, (p.Domain+7)/8)
		for i := range b {
			b[i] = byte(r.Bits[i/8] >> (8 * (i % 8)))
		}
		return Report{ID: id, Bits: hex.EncodeToString(b)}
	case ldp.KindOLH:
		s, v := r.Seed, int64(r.Value)
		return Report{ID: id, Seed: &s, Value: &v}
	case ldp.KindHR:
		row, v := int64(r.Seed), int64(r.Value)
		return Report{ID: id, Row: &row, Value: &v}
	}
	v := int64(r.Value)
	return Report{ID: id, Value: &v}
}
