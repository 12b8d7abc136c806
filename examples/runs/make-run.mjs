// Writes examples/runs/helpdesk-minisearch.trec: a TREC run made outside retrieval-sweep, by MiniSearch's BM25 over
// the helpdesk demo's documents (whole files). Run: node examples/runs/make-run.mjs
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import MiniSearch from 'minisearch';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '../../datasets/helpdesk');
const files = [];
const walk = (dir) => {
  for (const name of readdirSync(dir).sort()) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else files.push(p);
  }
};
walk(path.join(root, 'docs'));
const docs = files.map((f) => ({ id: path.relative(path.join(root, 'docs'), f).split(path.sep).join('/'), text: readFileSync(f, 'utf8') }));
const ms = new MiniSearch({ fields: ['text'], idField: 'id' });
ms.addAll(docs);
const lines = [];
for (const line of readFileSync(path.join(root, 'questions.jsonl'), 'utf8').split('\n')) {
  if (!line.trim()) continue;
  const q = JSON.parse(line);
  ms.search(q.question, { fuzzy: 0.1 })
    .slice(0, 10)
    .forEach((r, i) => lines.push(`${q.id} Q0 ${r.id} ${i + 1} ${r.score} minisearch`));
}
writeFileSync(path.join(here, 'helpdesk-minisearch.trec'), lines.join('\n') + '\n');
