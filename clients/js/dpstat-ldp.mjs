// dpstat-ldp.mjs: the dpstat local differential privacy client.
//
// A dependency-free ES module that randomizes a person's answer on their own
// device (in a browser or in Node) and posts the randomized report to a dpstat
// collector. Only the randomized report ever leaves the device.
//
// Sampling is exact: every probability is the dyadic rational num/2^log2den
// that the collector publishes (the same float64 values the Go randomizers
// use), a Bernoulli trial compares a uniformly random binary expansion with
// it, and uniform integers use rejection sampling. No floating-point
// arithmetic decides an outcome. Randomness comes from crypto.getRandomValues
// unless a test passes its own source.

const TWO32 = 4294967296;

/**
 * A source of uniformly random 32-bit unsigned integers from
 * crypto.getRandomValues, buffered.
 * @returns {{uint32: () => number}}
 */
export function secureRandom() {
  const c = globalThis.crypto;
  if (!c || typeof c.getRandomValues !== 'function') {
    throw new Error('dpstat-ldp: crypto.getRandomValues is not available: a secure random source is required');
  }
  const buf = new Uint32Array(256);
  let i = buf.length;
  return {
    uint32() {
      if (i === buf.length) {
        c.getRandomValues(buf);
        i = 0;
      }
      return buf[i++];
    },
  };
}

let defaultRng = null;
function rngOr(rng) {
  if (rng) return rng;
  if (!defaultRng) defaultRng = secureRandom();
  return defaultRng;
}

const chunkCache = new Map();

// chunks splits num (a decimal string) over log2den bits into 32-bit words,
// most significant first; the first word holds the top (log2den mod 32, or
// 32) bits.
function chunks(prob) {
  const key = prob.num + '/' + prob.log2den;
  let c = chunkCache.get(key);
  if (c) return c;
  const k = prob.log2den;
  if (!Number.isInteger(k) || k < 0 || k > 1100) {
    throw new Error(`dpstat-ldp: probability log2den = ${k}: want an integer in [0, 1100]`);
  }
  const num = BigInt(prob.num);
  if (num < 0n || num > (1n << BigInt(k))) {
    throw new Error(`dpstat-ldp: probability ${prob.num}/2^${k} is not in [0, 1]`);
  }
  c = { whole: num === (1n << BigInt(k)), words: [], widths: [] };
  let rest = k;
  const top = k % 32 === 0 ? 32 : k % 32;
  let width = top;
  while (rest > 0) {
    rest -= width;
    const w = Number((num >> BigInt(rest)) & ((1n << BigInt(width)) - 1n));
    c.words.push(w);
    c.widths.push(width);
    width = 32;
  }
  chunkCache.set(key, c);
  return c;
}

/**
 * Returns true with probability exactly num/2^log2den.
 * @param {{num: string, log2den: number}} prob
 * @param {{uint32: () => number}} [rng]
 */
export function bernoulli(prob, rng) {
  const c = chunks(prob);
  if (c.whole) return true;
  const r = rngOr(rng);
  for (let i = 0; i < c.words.length; i++) {
    const w = c.widths[i];
    const u = w === 32 ? r.uint32() : r.uint32() >>> (32 - w);
    if (u < c.words[i]) return true;
    if (u > c.words[i]) return false;
  }
  return false; // U equals p's expansion: U >= p
}

/**
 * The exact dyadic rational a JavaScript number (a float64) in [0, 1] is.
 * @param {number} x
 * @returns {{num: string, log2den: number}}
 */
export function dyadic(x) {
  if (!(x >= 0 && x <= 1)) throw new Error(`dpstat-ldp: probability ${x}: want a number in [0, 1]`);
  if (x === 0) return { num: '0', log2den: 0 };
  const dv = new DataView(new ArrayBuffer(8));
  dv.setFloat64(0, x);
  const hi = dv.getUint32(0), lo = dv.getUint32(4);
  const exp = (hi >>> 20) & 0x7ff;
  let mant = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
  let e;
  if (exp === 0) {
    e = -1074; // subnormal: mant·2^-1074
  } else {
    mant |= 1n << 52n;
    e = exp - 1075;
  }
  // x = mant·2^e with e < 0 for x ≤ 1 (x = 1 gives mant = 2^52, e = -52).
  let k = -e;
  while (k > 0 && (mant & 1n) === 0n) {
    mant >>= 1n;
    k--;
  }
  return { num: mant.toString(), log2den: k };
}

/**
 * A uniform integer in [0, n), n ≤ 2^32, by rejection (no modulo bias).
 * @param {number} n
 * @param {{uint32: () => number}} [rng]
 */
export function uniformInt(n, rng) {
  if (!(Number.isInteger(n) && n >= 1 && n <= TWO32)) throw new Error(`dpstat-ldp: uniformInt(${n}): want an integer in [1, 2^32]`);
  const r = rngOr(rng);
  const limit = TWO32 - (TWO32 % n);
  for (;;) {
    const u = r.uint32();
    if (u < limit) return u % n;
  }
}

function fmix32(h) {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * Optimized local hashing's hash: value v under seed goes to
 * floor(fmix32(fmix32(v) XOR seed)·g/2^32), the same family as the Go
 * collector's ldp.Hash.
 */
export function olhHash(seed, v, g) {
  const h = fmix32((fmix32(v >>> 0) ^ seed) >>> 0);
  return Math.floor((h * g) / TWO32); // h·g < 2^48: exact
}

// kary keeps v with probability p and otherwise returns a uniform other
// value; the other value is drawn either way, so that the running time does
// not tell whether the truth was kept.
/**
 * The Hadamard entry H[v][row] as a bit: 1 for +1 (an even number of common
 * one bits), 0 for −1; the same as the Go collector's ldp.HadamardBit.
 */
export function hadamardBit(v, row) {
  let x = (v & row) >>> 0;
  let parity = 0;
  while (x) {
    parity ^= 1;
    x &= x - 1;
  }
  return 1 - parity;
}

function kary(p, k, v, r) {
  const keep = bernoulli(p, r);
  let x = uniformInt(k - 1, r);
  if (x >= v) x++;
  return keep ? v : x;
}

function checkValue(v, d) {
  if (!(Number.isInteger(v) && v >= 0 && v < d)) {
    throw new Error(`dpstat-ldp: value ${v}: want an integer in [0, ${d})`);
  }
}

/**
 * Randomizes one answer with a survey's public parameters (the "params"
 * object of GET /api/surveys/{id}) and returns the report fields:
 * {value} for rr and krr, {seed, value} for olh, {row, value} for hr,
 * {bits} (hex) for oue and sue. v is the index of the answer in [0, domain).
 * @param {object} params
 * @param {number} v
 * @param {{uint32: () => number}} [rng]
 */
export function randomize(params, v, rng) {
  const r = rngOr(rng);
  const d = params.domain;
  switch (params.mechanism) {
    case 'rr':
      checkValue(v, 2);
      return { value: bernoulli(params.p, r) ? v : 1 - v };
    case 'krr':
      checkValue(v, d);
      return { value: kary(params.p, d, v, r) };
    case 'olh': {
      checkValue(v, d);
      const seed = r.uint32();
      return { seed, value: kary(params.p, params.g, olhHash(seed, v, params.g), r) };
    }
    case 'hr': {
      checkValue(v, d);
      const row = uniformInt(params.rows, r);
      const bit = hadamardBit(v, row);
      return { row, value: bernoulli(params.p, r) ? bit : 1 - bit };
    }
    case 'oue':
    case 'sue': {
      checkValue(v, d);
      const bytes = new Uint8Array(Math.ceil(d / 8));
      // Every bit takes one Bernoulli trial of the same kind of work, in
      // the same order, whatever v is.
      for (let j = 0; j < d; j++) {
        if (bernoulli(j === v ? params.p : params.q, r)) bytes[j >> 3] |= 1 << (j & 7);
      }
      let hex = '';
      for (const b of bytes) hex += b.toString(16).padStart(2, '0');
      return { bits: hex };
    }
    default:
      throw new Error(`dpstat-ldp: mechanism ${params.mechanism}: use randomizeMean for mean, or one of rr, krr, olh, hr, oue, sue`);
  }
}

/**
 * Randomizes a number x in [lo, hi] for a mean survey: rounds it to hi with
 * probability exactly (x − lo)/(hi − lo) (as the float64 that quotient is),
 * then reports the bit through binary randomized response with p.
 */
export function randomizeMean(params, range, x, rng) {
  const [lo, hi] = range;
  if (!(x >= lo && x <= hi)) throw new Error(`dpstat-ldp: value ${x}: want a number in [${lo}, ${hi}]`);
  const r = rngOr(rng);
  const bit = bernoulli(dyadic((x - lo) / (hi - lo)), r) ? 1 : 0;
  return { value: bernoulli(params.p, r) ? bit : 1 - bit };
}

/** A random 128-bit report id (hex), chosen by the device. */
export function reportId(rng) {
  const r = rngOr(rng);
  let s = '';
  for (let i = 0; i < 4; i++) s += r.uint32().toString(16).padStart(8, '0');
  return s;
}

async function call(url, init) {
  const res = await fetch(url, init);
  const body = await res.json().catch(() => null);
  if (!res.ok) {
    const err = body && body.error;
    const msg = err && err.message ? `${err.code}: ${err.message}` : `HTTP ${res.status}`;
    throw new Error(`dpstat-ldp: ${msg}`);
  }
  return body;
}

/** Fetches a survey's public parameters. */
export function fetchSurvey(base, id) {
  return call(`${base}/api/surveys/${encodeURIComponent(id)}`);
}

/** Posts reports ({id, ...fields}) to a survey; resolves to {accepted, duplicates, total}. */
export function postReports(base, id, reports) {
  return call(`${base}/api/surveys/${encodeURIComponent(id)}/reports`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ reports }),
  });
}

/** Fetches a survey's estimates. */
export function fetchEstimates(base, id) {
  return call(`${base}/api/surveys/${encodeURIComponent(id)}/estimates`);
}

/**
 * Randomizes an answer on this device and posts it. answer is the index of
 * the chosen label, or the number for a mean survey.
 */
export async function answer(base, survey, ans, rng) {
  const fields = survey.params.mechanism === 'mean'
    ? randomizeMean(survey.params, survey.domain.range, ans, rng)
    : randomize(survey.params, ans, rng);
  return postReports(base, survey.id, [{ id: reportId(rng), ...fields }]);
}
