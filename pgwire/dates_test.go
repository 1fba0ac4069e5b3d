package pgwire

import (
	"encoding/binary"
	"testing"

	"github.com/dpstat/dpstat/answer"
	"github.com/dpstat/dpstat/answer/answertest"
	"github.com/dpstat/dpstat/schema"
)

// TestEncodeTemporal checks released date and timestamp keys in both
// formats: binary dates count days, and timestamps microseconds, from
// 2000-01-01.
func TestEncodeTemporal(t *testing.T) {
	b, err := encode("2024-03-01", oidDate, 0)
	if err != nil || string(b) != "2024-03-01" {
		t.Errorf("text date = %q, %v", b, err)
	}
	b, err = encode("2000-01-02", oidDate, 1)
	if err != nil || int32(binary.BigEndian.Uint32(b)) != 1 {
		t.Errorf("binary date = %v, %v; want 1", b, err)
	}
	b, err = encode("1999-12-31 23:59:59", oidTimestamp, 1)
	if err != nil || int64(binary.BigEndian.Uint64(b)) != -1_000_000 {
		t.Errorf("binary timestamp = %v, %v; want -1000000", b, err)
	}
	if _, err := encode("soon", oidDate, 1); err == nil {
		t.Error("a value that is not a date was encoded")
	}
}

// TestShapeTemporalAggregate checks that a released MIN of a date is
// typed date and its interval columns stay numbers.
func TestShapeTemporalAggregate(t *testing.T) {
	ss := &session{s: &Server{opts: Options{Answerer: &answertest.Answerer{}}}, intervals: true}
	resp := &answer.Response{Columns: []string{"min_signup"}, Types: []schema.Type{schema.Date},
		Rows: [][]any{{"2024-01-15"}}, CI: [][]*[2]float64{{{19723, 20088}}}}
	d := ss.shape(resp)
	if len(d.cols) != 3 || d.cols[0].oid != oidDate || d.cols[1].oid != oidFloat8 {
		t.Errorf("columns %+v: want a date and two float8 interval ends", d.cols)
	}
}
