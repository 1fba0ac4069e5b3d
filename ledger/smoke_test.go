package ledger

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/dpstat/dpstat/accounting"
)

func TestSmoke(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a", "l.db")
	l, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	k := Key{"d", "a"}
	if _, err := l.Grant(k, accounting.EpsDelta{Epsilon: 1}, accounting.Basic); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 9; i++ {
		r, err := l.Charge(context.Background(), Charge{Key: k, Cost: accounting.Pure(0.1)})
		if err != nil {
			t.Fatal(err)
		}
		t.Log(r)
	}
	_, err = l.Charge(context.Background(), Charge{Key: k, Cost: accounting.Pure(0.1)})
	var ee *accounting.ExceededError
	if !errors.As(err, &ee) {
		t.Fatal(err)
	}
	t.Log(err)
	l.Close()
	l, err = Open(p, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := l.Status(k)
	t.Log(st, err)
	h, _ := l.History(Key{}, 3)
	t.Log(h)
	l.Close()
}
