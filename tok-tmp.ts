import { readFileSync } from 'node:fs';
import { keywordTokens } from '/work/main/src/retrieve/tokenize.js';
const texts: string[] = [];
for (const l of readFileSync('/work/shared/datasets/scifact/corpus.jsonl', 'utf8').split('\n')) { if (!l) continue; const o = JSON.parse(l); texts.push(o.title + '\n\n' + o.text); }
for (const l of readFileSync('/work/shared/datasets/trec-dl-2019-5k/corpus.jsonl', 'utf8').split('\n')) { if (!l) continue; const o = JSON.parse(l); texts.push(o.title + '\n\n' + o.text); }
let chars = 0; for (const t of texts) chars += t.length;
for (let r = 0; r < 4; r++) {
  const t0 = performance.now(); let n = 0;
  for (const t of texts) n += keywordTokens(t).length;
  const s = (performance.now() - t0) / 1000;
  console.log(`pass ${r}: ${s.toFixed(2)} s, ${(chars / s / 1e6).toFixed(2)} MB/s, ${n} tokens`);
}
