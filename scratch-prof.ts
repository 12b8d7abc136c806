import { loadBeir } from './src/load/beir.js';
import { chunkDocuments, defaultTokenizer } from './src/chunk/chunker.js';
const { docs } = await loadBeir('../shared/datasets/scifact', 'test', { labels: 'keep' });
const tok = defaultTokenizer();
for (const d of docs) tok.encode(d.text);
const parts: string[] = []; let n = 0;
for (let i = 0; n < 2 * 1024 * 1024; i++) { parts.push(docs[i % docs.length].text); n += docs[i % docs.length].text.length + 1; }
const text = parts.join(' ');
const t0 = performance.now();
const c = chunkDocuments([{ id: 'x', text }], { size: 128, overlap: 16 }, tok);
console.log(c.length, (performance.now() - t0) / 1000);
