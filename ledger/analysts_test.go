package ledger

import (
	"errors"
	"strings"
	"testing"
)

func TestAnalystRecords(t *testing.T) {
	path := tempPath(t)
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if recs, err := l.AnalystRecords(); err != nil || len(recs) != 0 {
		t.Fatalf("fresh ledger: %v %v", recs, err)
	}
	if _, ok, err := l.AnalystRecordOf("alice"); ok || err != nil {
		t.Fatalf("missing record: %v %v", ok, err)
	}
	bad := []struct {
		name string
		key  string
		data []byte
	}{
		{"empty name", "", []byte("x")},
		{"control character", "a\nb", []byte("x")},
		{"empty record", "alice", nil},
		{"oversize record", "alice", []byte(strings.Repeat("x", MaxAnalystRecordLen+1))},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if err := l.PutAnalystRecord(tc.key, tc.data); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	for _, n := range []string{"bob", "alice"} {
		if err := l.PutAnalystRecord(n, []byte(`{"name":"`+n+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.PutAnalystRecord("alice", []byte(`{"v":2}`)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if err := l.PutAnalystRecord("carol", []byte("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	recs, err := ro.AnalystRecords()
	if err != nil || len(recs) != 2 || recs[0].Name != "alice" || string(recs[0].Data) != `{"v":2}` || recs[1].Name != "bob" {
		t.Fatalf("after reopen: %+v %v", recs, err)
	}
	if err := ro.PutAnalystRecord("carol", []byte("x")); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only: %v", err)
	}
}
