// Counts primes up to workerData.limit with a segmented sieve of Eratosthenes, off the main
// thread. Posts { progress } now and then and { count } at the end. Plain JavaScript so it
// loads in a worker thread without a TypeScript loader.
import { parentPort, workerData } from 'node:worker_threads';

const limit = workerData.limit;
const SEGMENT = 1 << 18;

const root = Math.floor(Math.sqrt(limit));
const small = new Uint8Array(root + 1);
const basePrimes = [];
for (let i = 2; i <= root; i++) {
  if (small[i]) continue;
  basePrimes.push(i);
  for (let j = i * i; j <= root; j += i) small[j] = 1;
}

let count = 0;
const segment = new Uint8Array(SEGMENT);
let lastReport = Date.now();
for (let low = 2; low <= limit; low += SEGMENT) {
  const high = Math.min(low + SEGMENT - 1, limit);
  segment.fill(0);
  for (const p of basePrimes) {
    if (p * p > high) break;
    const start = Math.max(p * p, Math.ceil(low / p) * p);
    for (let j = start; j <= high; j += p) segment[j - low] = 1;
  }
  for (let i = 0, n = high - low; i <= n; i++) if (segment[i] === 0) count++;
  const now = Date.now();
  if (now - lastReport >= 100) {
    lastReport = now;
    parentPort.postMessage({ progress: (high - 1) / (limit - 1) });
  }
}
parentPort.postMessage({ count });
