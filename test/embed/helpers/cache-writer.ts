/**
 * Child process for the cache concurrency test: opens the cache file given as argv[2] and writes argv[4] vectors
 * with keys `<argv[3]>-<i>` (vector i = [i, i + 0.5, -i]), one put per vector so both writers interleave.
 * Prints `ok <n>` on success. Run as `node --import tsx test/embed/helpers/cache-writer.ts <file> <tag> <n>`.
 */
import { EmbeddingCache } from '../../../src/embed/cache.js';

const [file, tag, count] = process.argv.slice(2);
const n = Number(count);
const cache = EmbeddingCache.open(file);
for (let i = 0; i < n; i++) cache.put([[`${tag}-${i}`, Float32Array.from([i, i + 0.5, -i])]]);
cache.close();
process.stdout.write(`ok ${n}\n`);
