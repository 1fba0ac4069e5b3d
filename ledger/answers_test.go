package ledger

import (
	"context"
	"testing"

	"github.com/dpstat/dpstat/accounting"
)

// TestAnswersLists: Answers returns the stored answers of one dataset,
// every analyst's, with the prefix asked, and leaves out answers not
// stored yet and other datasets'.
func TestAnswersLists(t *testing.T) {
	l := mustOpen(t, tempPath(t), Options{})
	defer l.Close()
	ctx := context.Background()
	charge := func(ds, an, key string, answer []byte) {
		k := Key{Dataset: ds, Analyst: an}
		if _, err := l.Grant(k, accounting.EpsDelta{Epsilon: 10}, accounting.Basic); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Charge(ctx, Charge{Key: k, Cost: accounting.Pure(1), AnswerKey: key}); err != nil {
			t.Fatal(err)
		}
		if answer != nil {
			if err := l.StoreAnswer(k, key, answer); err != nil {
				t.Fatal(err)
			}
		}
	}
	charge("adult", "ann", "v:1", []byte("a1"))
	charge("adult", "bob", "v:2", []byte("b2"))
	charge("adult", "ann", "v:3", nil) // charged, answer not stored
	charge("adult", "ann", "w:4", []byte("other prefix"))
	charge("adult2", "ann", "v:5", []byte("other dataset"))
	got, err := l.Answers("adult", "v:")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"ann v:1": "a1", "bob v:2": "b2"}
	if len(got) != len(want) {
		t.Fatalf("got %d answers %v, want %v", len(got), got, want)
	}
	for _, a := range got {
		if want[a.Key.Analyst+" "+a.AnswerKey] != string(a.Answer) || a.Key.Dataset != "adult" {
			t.Errorf("unexpected answer %+v", a)
		}
	}
	if _, err := l.Answers("", "v:"); err == nil {
		t.Error("an empty dataset was accepted")
	}
}
