package collector

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// decodeSlow is what the handler does without the fast path.
func decodeSlow(body []byte) ([]Report, bool) {
	var b batch
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil || dec.More() {
		return nil, false
	}
	single := b.Report.ID != "" || b.Report.Value != nil || b.Report.Seed != nil || b.Report.Row != nil || b.Report.Bits != ""
	if single {
		return nil, false
	}
	return b.Reports, true
}

// TestFastBatchParserAgreesWithEncodingJSON checks that every body the fast
// parser accepts decodes to exactly what encoding/json gives, on
// hand-written edge cases and on random mutations of valid batches.
func TestFastBatchParserAgreesWithEncodingJSON(t *testing.T) {
	cases := []string{
		`{"reports":[{"id":"a","value":1}]}`,
		` { "reports" : [ { "id" : "a" , "value" : 0 } , {"id":"b","seed":4294967295,"value":-3} ] } `,
		`{"reports":[]}`,
		`{"reports":[{}]}`,
		`{"reports":[{"id":"a","bits":"00ff"}]}`,
		`{"reports":[{"id":"a","value":01}]}`,
		`{"reports":[{"id":"a","value":1.0}]}`,
		`{"reports":[{"id":"a","value":1e2}]}`,
		`{"reports":[{"id":"a","value":9223372036854775807}]}`,
		`{"reports":[{"id":"a","value":9223372036854775808}]}`,
		`{"reports":[{"id":"a","value":-9223372036854775808}]}`,
		`{"reports":[{"id":"a","seed":4294967296,"value":1}]}`,
		`{"reports":[{"id":"a","seed":-1,"value":1}]}`,
		`{"reports":[{"id":"a\u0062","value":1}]}`,
		`{"reports":[{"id":"é","value":1}]}`,
		`{"reports":[{"id":"a","id":"b","value":1}]}`,
		`{"reports":[{"ID":"a","value":1}]}`,
		`{"Reports":[{"id":"a","value":1}]}`,
		`{"reports":[{"id":"a","value":1,"user":"bob"}]}`,
		`{"reports":[{"id":"a","value":null}]}`,
		`{"reports":[{"id":"a","value":1}]} x`,
		`{"reports":[{"id":"a","value":1}],}`,
		`{"reports":[{"id":"a","value":1},]}`,
		`{"reports":[{"id":"a","value":1}]`,
		`{"reports":[{"id":"a","value":-}]}`,
		`{"reports":[{"id":"a","value":1}]}{}`,
		`{"id":"a","value":1}`,
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 3000; i++ {
		var sb strings.Builder
		sb.WriteString(`{"reports":[`)
		n := r.IntN(4)
		for j := 0; j < n; j++ {
			if j > 0 {
				sb.WriteString(",")
			}
			fmt.Fprintf(&sb, `{"id":"r%d","value":%d,"seed":%d,"row":%d,"bits":"%x"}`, r.IntN(100), r.Int64()>>r.IntN(64)-r.Int64N(3), r.Uint32(), r.Int64()>>r.IntN(64), r.Uint32())
		}
		sb.WriteString(`]}`)
		b := []byte(sb.String())
		// Mutate a few bytes.
		for k := r.IntN(3); k > 0 && len(b) > 0; k-- {
			const alphabet = " \t{}[],:\"\\-.e0123456789aZ"
			b[r.IntN(len(b))] = alphabet[r.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	accepted := 0
	for _, c := range cases {
		fast, ok := parseBatchFast([]byte(c))
		if !ok {
			continue
		}
		accepted++
		slow, sok := decodeSlow([]byte(c))
		if !sok {
			t.Fatalf("fast parser accepted %q, encoding/json refuses it", c)
		}
		if len(fast) == 0 && len(slow) == 0 {
			continue
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: fast %+v, encoding/json %+v", c, fast, slow)
		}
	}
	if accepted < 1000 {
		t.Fatalf("the fast parser accepted only %d bodies", accepted)
	}
}
