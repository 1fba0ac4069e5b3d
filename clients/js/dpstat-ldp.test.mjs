// Tests of dpstat-ldp.mjs with Node's built-in runner: node --test clients/js/
//
// Every statistical check uses a fixed seed and a bound with a stated
// false-failure probability: z-tests at |z| ≤ 5.3 (1.2e-7 each) and
// chi-square tests at the upper 1e-6 quantile (Wilson–Hilferty). With about
// 60 checks, the suite fails by chance with probability below 1e-5.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  bernoulli, dyadic, uniformInt, olhHash, hadamardBit, randomize, randomizeMean, reportId, secureRandom,
} from './dpstat-ldp.mjs';

const fixtures = JSON.parse(readFileSync(new URL('./testdata/fixtures.json', import.meta.url)));

// xoshiro128** seeded by splitmix32: a deterministic source for tests only.
function seeded(seed) {
  let x = seed >>> 0;
  const sm = () => {
    x = (x + 0x9e3779b9) >>> 0;
    let z = x;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
  const s = [sm(), sm(), sm(), sm()];
  const rotl = (v, k) => ((v << k) | (v >>> (32 - k))) >>> 0;
  return {
    uint32() {
      const r = Math.imul(rotl(Math.imul(s[1], 5) >>> 0, 7), 9) >>> 0;
      const t = (s[1] << 9) >>> 0;
      s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
      s[2] ^= t; s[3] = rotl(s[3], 11);
      s[0] >>>= 0; s[1] >>>= 0; s[2] >>>= 0;
      return r;
    },
  };
}

const Z = 5.3;
function zTest(ones, n, p, what) {
  const z = (ones - n * p) / Math.sqrt(n * p * (1 - p));
  assert.ok(Math.abs(z) <= Z, `${what}: ${ones} of ${n}, expected p = ${p}, z = ${z.toFixed(2)}`);
}

// Upper 1e-6 quantile of chi-square(df), Wilson–Hilferty.
function chiCritical(df) {
  const z = 4.7534;
  const a = 2 / (9 * df);
  return df * (1 - a + z * Math.sqrt(a)) ** 3;
}

function chiTest(counts, probs, what) {
  const n = counts.reduce((a, b) => a + b, 0);
  let chi = 0;
  counts.forEach((c, i) => { chi += (c - n * probs[i]) ** 2 / (n * probs[i]); });
  const crit = chiCritical(counts.length - 1);
  assert.ok(chi <= crit, `${what}: chi-square ${chi.toFixed(1)} > ${crit.toFixed(1)} (df ${counts.length - 1})`);
}

const val = (prob) => Number(BigInt(prob.num)) / 2 ** prob.log2den;

test('dyadic gives the same exact fractions as Go', () => {
  for (const c of fixtures.cases) {
    for (const key of ['p', 'q']) {
      const pr = c.params[key];
      assert.deepEqual(dyadic(pr.value), { num: pr.num, log2den: pr.log2den }, `${c.name} ${key}`);
    }
  }
  assert.deepEqual(dyadic(0.5), { num: '1', log2den: 1 });
  assert.deepEqual(dyadic(1), { num: '1', log2den: 0 });
  assert.deepEqual(dyadic(0), { num: '0', log2den: 0 });
  assert.deepEqual(dyadic(5e-324), { num: '1', log2den: 1074 });
  assert.throws(() => dyadic(1.5), /want a number in \[0, 1\]/);
  assert.throws(() => dyadic(NaN), /want a number in \[0, 1\]/);
});

test('bernoulli hits the exact probabilities', () => {
  let seed = 1;
  for (const c of fixtures.cases) {
    for (const key of ['p', 'q']) {
      const pr = c.params[key];
      const r = seeded(seed++);
      const n = 100000;
      let ones = 0;
      for (let i = 0; i < n; i++) if (bernoulli(pr, r)) ones++;
      zTest(ones, n, val(pr), `${c.name} ${key}`);
    }
  }
  assert.equal(bernoulli({ num: '1', log2den: 0 }, seeded(1)), true);
  assert.equal(bernoulli({ num: '0', log2den: 0 }, seeded(1)), false);
  assert.throws(() => bernoulli({ num: '3', log2den: 1 }, seeded(1)), /not in \[0, 1\]/);
});

test('uniformInt is uniform', () => {
  const r = seeded(77);
  for (const n of [2, 3, 7, 1000]) {
    const k = Math.min(n, 10);
    const counts = new Array(k).fill(0);
    const draws = 50000;
    for (let i = 0; i < draws; i++) {
      const u = uniformInt(n, r);
      assert.ok(u >= 0 && u < n);
      if (u < k) counts[u]++;
    }
    if (n <= 10) chiTest(counts, new Array(k).fill(1 / n), `uniformInt(${n})`);
  }
  assert.throws(() => uniformInt(0), /want an integer/);
});

test('olhHash equals the Go hash', () => {
  for (const h of fixtures.hashes) {
    assert.equal(olhHash(h.seed, h.v, h.g), h.hash, `seed ${h.seed} v ${h.v} g ${h.g}`);
  }
});

const N = 60000;

test('k-ary and binary randomized response match the exact distribution', () => {
  let seed = 100;
  for (const c of fixtures.cases.filter((c) => c.params.mechanism === 'krr' || c.params.mechanism === 'rr')) {
    const d = c.params.domain;
    const r = seeded(seed++);
    const counts = new Array(d).fill(0);
    for (let i = 0; i < N; i++) counts[randomize(c.params, c.value, r).value]++;
    const p = val(c.params.p);
    const probs = Array.from({ length: d }, (_, v) => (v === c.value ? p : (1 - p) / (d - 1)));
    chiTest(counts, probs, c.name);
    zTest(counts[c.value], N, p, `${c.name} keep`);
  }
});

test('olh reports the true hash with probability p', () => {
  let seed = 200;
  for (const c of fixtures.cases.filter((c) => c.params.mechanism === 'olh')) {
    const { g } = c.params;
    const r = seeded(seed++);
    const counts = new Array(g).fill(0);
    for (let i = 0; i < N; i++) {
      const rep = randomize(c.params, c.value, r);
      assert.ok(rep.seed >= 0 && rep.seed < 2 ** 32 && rep.value >= 0 && rep.value < g);
      counts[(rep.value - olhHash(rep.seed, c.value, g) + g) % g]++;
    }
    const p = val(c.params.p);
    chiTest(counts, Array.from({ length: g }, (_, k) => (k === 0 ? p : (1 - p) / (g - 1))), c.name);
  }
});

test('hr draws a uniform row and reports its sign with probability p', () => {
  const c = fixtures.cases.find((c) => c.params.mechanism === 'hr');
  const K = c.params.rows;
  assert.equal(hadamardBit(0, 5), 1);
  assert.equal(hadamardBit(3, 1), 0);
  assert.equal(hadamardBit(3, 3), 1);
  const r = seeded(250);
  const rows = new Array(K).fill(0);
  let agree = 0;
  for (let i = 0; i < N; i++) {
    const rep = randomize(c.params, c.value, r);
    assert.ok(Number.isInteger(rep.row) && rep.row >= 0 && rep.row < K && (rep.value === 0 || rep.value === 1));
    rows[rep.row]++;
    if (rep.value === hadamardBit(c.value, rep.row)) agree++;
  }
  chiTest(rows, new Array(K).fill(1 / K), `${c.name} rows`);
  zTest(agree, N, val(c.params.p), `${c.name} sign kept`);
});

test('unary encodings set each bit with the exact p and q', () => {
  let seed = 300;
  for (const c of fixtures.cases.filter((c) => c.params.mechanism === 'oue' || c.params.mechanism === 'sue')) {
    const d = c.params.domain;
    const r = seeded(seed++);
    const ones = new Array(d).fill(0);
    const n = 20000;
    for (let i = 0; i < n; i++) {
      const { bits } = randomize(c.params, c.value, r);
      assert.equal(bits.length, 2 * Math.ceil(d / 8));
      for (let j = 0; j < d; j++) {
        if ((parseInt(bits.substr(2 * (j >> 3), 2), 16) >> (j & 7)) & 1) ones[j]++;
      }
    }
    zTest(ones[c.value], n, val(c.params.p), `${c.name} true bit`);
    const other = ones.reduce((a, b) => a + b, 0) - ones[c.value];
    zTest(other, n * (d - 1), val(c.params.q), `${c.name} other bits`);
  }
});

test('mean reports 1 with probability (1 − p) + t(2p − 1)', () => {
  const c = fixtures.cases.find((c) => c.params.mechanism === 'mean');
  const r = seeded(400);
  let ones = 0;
  for (let i = 0; i < N; i++) ones += randomizeMean(c.params, c.range, c.value, r).value;
  const p = val(c.params.p);
  const t = (c.value - c.range[0]) / (c.range[1] - c.range[0]);
  zTest(ones, N, 1 - p + t * (2 * p - 1), c.name);
  assert.throws(() => randomizeMean(c.params, c.range, 25, r), /want a number in \[10, 20\]/);
});

test('bad input is refused with a clear error', () => {
  const krr = fixtures.cases.find((c) => c.params.mechanism === 'krr').params;
  assert.throws(() => randomize(krr, 5), /value 5: want an integer in \[0, 5\)/);
  assert.throws(() => randomize(krr, -1), /want an integer/);
  assert.throws(() => randomize({ ...krr, mechanism: 'laplace' }, 0), /mechanism laplace/);
});

test('the secure source and report ids', () => {
  const r = secureRandom();
  const id = reportId(r);
  assert.match(id, /^[0-9a-f]{32}$/);
  assert.notEqual(reportId(r), id);
  const krr = fixtures.cases.find((c) => c.params.mechanism === 'krr').params;
  const v = randomize(krr, 1).value; // default secure source
  assert.ok(v >= 0 && v < krr.domain);
});
