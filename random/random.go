// Package random provides the sources of random bits that every sampler in
// dpstat draws from.
//
// Production code uses a cryptographically secure source: ChaCha8 generators
// keyed from the operating system's entropy (crypto/rand), one per goroutine
// at a time through a pool, so that no global lock sits on the sampling path.
// Tests may use a deterministic seeded source; its constructor says
// "Insecure" in its name so that it cannot be chosen by accident.
package random

import (
	crand "crypto/rand"
	"math/rand/v2"
	"sync"
)

// Source is a stream of uniformly distributed 64-bit words.
//
// A Source is not safe for concurrent use unless its documentation says so.
type Source interface {
	// Uint64 returns 64 uniformly random bits.
	Uint64() uint64
}

// Secure is a cryptographically secure Source: a ChaCha8 generator keyed
// with 32 bytes from crypto/rand. It is not safe for concurrent use; use one
// per goroutine, or Borrow and Return one from the shared pool.
type Secure struct {
	g *rand.ChaCha8
}

// NewSecure returns a new secure source keyed from the operating system's
// entropy. It panics only if the operating system cannot supply entropy, in
// which case no private release is possible at all.
func NewSecure() *Secure {
	var seed [32]byte
	if _, err := crand.Read(seed[:]); err != nil {
		panic("random: the operating system's entropy source failed: " + err.Error())
	}
	return &Secure{g: rand.NewChaCha8(seed)}
}

// Uint64 returns 64 uniformly random bits.
func (s *Secure) Uint64() uint64 { return s.g.Uint64() }

var pool = sync.Pool{New: func() any { return NewSecure() }}

// Borrow takes a secure source from a process-wide pool. The caller owns it
// until it calls Return; sync.Pool keeps per-processor caches, so Borrow and
// Return take no global lock.
func Borrow() *Secure { return pool.Get().(*Secure) }

// Return gives a source obtained from Borrow back to the pool.
func Return(s *Secure) {
	if s != nil {
		pool.Put(s)
	}
}

// Shared is a Source that is safe for concurrent use: every call borrows a
// secure generator from the pool. It is convenient where a Source is needed
// but no goroutine owns one; hot loops should Borrow once instead.
type Shared struct{}

// Uint64 returns 64 uniformly random bits from a pooled secure generator.
func (Shared) Uint64() uint64 {
	s := Borrow()
	v := s.Uint64()
	Return(s)
	return v
}

// InsecureSeeded is a deterministic source for tests and reproducible
// teaching examples. It must never be used for a real release: anyone who
// knows the seed can remove the noise.
type InsecureSeeded struct {
	g *rand.ChaCha8
}

// NewInsecureSeeded returns a deterministic source whose stream is fixed by
// seed. The name says what it is: it provides no privacy.
func NewInsecureSeeded(seed uint64) *InsecureSeeded {
	var key [32]byte
	for i := 0; i < 8; i++ {
		key[i] = byte(seed >> (8 * i))
	}
	return &InsecureSeeded{g: rand.NewChaCha8(key)}
}

// Uint64 returns the next 64 bits of the seeded stream.
func (s *InsecureSeeded) Uint64() uint64 { return s.g.Uint64() }
