package query

import (
	"context"
	"sync"
	"testing"
)

// TestServiceConcurrent answers queries from several goroutines with the
// secure pooled source (run with -race).
func TestServiceConcurrent(t *testing.T) {
	svc, _, led := newTestService(t, "testdata/catalog.yaml")
	queries := []string{
		"SELECT city, COUNT(*), AVG(age) FROM people GROUP BY city",
		"SELECT SUM(score) FROM people WHERE flag",
		"SELECT COUNT(*) FROM empty",
	}
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, err := svc.Answer(context.Background(), queries[i%len(queries)], Options{Epsilon: 1, Confidence: 0.95, Analyst: "a"})
			errs <- err
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if led.count() != 12 {
		t.Errorf("charges = %d, want 12", led.count())
	}
}
