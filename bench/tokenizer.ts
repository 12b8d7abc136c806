/**
 * `npx tsx bench/tokenizer.ts [--reps N]` (or `npm run bench:tokenizer`): the chunk stage's cl100k tokenizer, the
 * regex pre-token cut (`cl100kTokenizer({ cut: 'regex' })`, the tokenizer before session 11) against the scanner
 * (`cut: 'scanner'`, the default), old and new side by side in one process, repetitions alternated (old, new, new,
 * old, …), medians printed.
 *
 * Measures, on SciFact and the TREC-DL slice (../shared/datasets, each skipped when absent; documents as loadBeir
 * builds them, `title\n\ntext`):
 * - the cut alone: pre-tokens of every document, regex `matchAll` against `nextPreTokenEnd` (and that the two cuts are
 *   equal);
 * - `count()` of every document (the work of chunking `none`), each tokenizer's pre-token memo warmed by one untimed
 *   pass first; tokens per second = tokens of the corpus / median seconds;
 * - `chunkDocuments` over SciFact, single thread, for `none` and 256/16, with a fresh tokenizer per repetition (cold
 *   memo, as a worker starts), and whether the chunks (ids, start, end, tokens) are identical.
 * Prints a Markdown table on stdout; `cat /proc/loadavg` before and after on stderr. Default 7 repetitions.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import cl100kBase from 'js-tiktoken/ranks/cl100k_base';
import { chunkDocuments, cl100kTokenizer, type Tokenizer } from '../src/chunk/chunker.js';
import { nextPreTokenEnd } from '../src/chunk/pretokens.js';
import { loadBeir } from '../src/load/beir.js';
import type { Chunk, ChunkingSpec, Doc } from '../src/types.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const datasets = path.resolve(here, '../../shared/datasets');
const CORPORA = [
  { name: 'SciFact', dir: path.join(datasets, 'scifact'), split: 'test' },
  { name: 'TREC-DL slice', dir: path.join(datasets, 'trec-dl-2019-5k'), split: 'test' },
];

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

function seconds(f: () => void): number {
  const t0 = performance.now();
  f();
  return (performance.now() - t0) / 1000;
}

/** Runs `old` and `neu` `reps` times each, alternated (ABBA…), and returns their median seconds. */
function alternated(reps: number, old: () => void, neu: () => void): [number, number] {
  const a: number[] = [];
  const b: number[] = [];
  for (let r = 0; r < reps; r++) {
    if (r % 2 === 0) {
      a.push(seconds(old));
      b.push(seconds(neu));
    } else {
      b.push(seconds(neu));
      a.push(seconds(old));
    }
  }
  return [median(a), median(b)];
}

const key = (c: Chunk): string => `${c.id} ${c.start} ${c.end} ${c.tokens}`;

async function main(): Promise<void> {
  const reps = arg('--reps', 7);
  process.stderr.write(`loadavg before: ${readFileSync('/proc/loadavg', 'utf8')}`);
  const rows: string[] = [
    '| corpus | measure | regex (old) | scanner (new) | old / new | equal |',
    '|---|---|---:|---:|---:|---|',
  ];
  const fmt = (x: number): string => (x >= 100 ? x.toFixed(0) : x.toFixed(3));
  for (const corpus of CORPORA) {
    if (!existsSync(corpus.dir)) {
      process.stderr.write(`${corpus.name}: ${corpus.dir} absent, skipped\n`);
      continue;
    }
    const { docs } = await loadBeir(corpus.dir, corpus.split, { labels: 'keep' });
    const chars = docs.reduce((s, d) => s + d.text.length, 0);
    process.stderr.write(`${corpus.name}: ${docs.length} documents, ${chars} UTF-16 code units\n`);

    // The cut alone.
    const pattern = new RegExp(cl100kBase.pat_str, 'gu');
    let preOld = 0;
    let preNew = 0;
    let cutsEqual = true;
    for (const d of docs) {
      const a = Array.from(d.text.matchAll(pattern), (m) => m.index! + m[0].length);
      const b: number[] = [];
      for (let i = 0; i < d.text.length; ) b.push((i = nextPreTokenEnd(d.text, i)));
      if (a.length !== b.length || a.some((x, i) => x !== b[i])) cutsEqual = false;
    }
    const [cutOld, cutNew] = alternated(
      reps,
      () => {
        preOld = 0;
        for (const d of docs) for (const m of d.text.matchAll(pattern)) preOld += m[0].length > 0 ? 1 : 0;
      },
      () => {
        preNew = 0;
        for (const d of docs) for (let i = 0; i < d.text.length; preNew++) i = nextPreTokenEnd(d.text, i);
      },
    );
    rows.push(
      `| ${corpus.name} | cut: million pre-tokens / s | ${fmt(preOld / cutOld / 1e6)} | ${fmt(preNew / cutNew / 1e6)} | ${(cutOld / cutNew).toFixed(2)} | ${cutsEqual && preOld === preNew} |`,
    );

    // count() with a warm memo.
    const oldTok = cl100kTokenizer({ cut: 'regex' });
    const newTok = cl100kTokenizer({ cut: 'scanner' });
    const countAll = (t: Tokenizer): number => docs.reduce((s, d) => s + t.count!(d.text), 0);
    const tokens = countAll(oldTok);
    const countsEqual = tokens === countAll(newTok) && docs.every((d) => oldTok.count!(d.text) === newTok.count!(d.text));
    const [countOld, countNew] = alternated(
      reps,
      () => void countAll(oldTok),
      () => void countAll(newTok),
    );
    rows.push(
      `| ${corpus.name} | count(), warm memo: million tokens / s (${tokens} tokens) | ${fmt(tokens / countOld / 1e6)} | ${fmt(tokens / countNew / 1e6)} | ${(countOld / countNew).toFixed(2)} | ${countsEqual} |`,
    );

    if (corpus.name !== 'SciFact') continue;
    const specs: [string, ChunkingSpec][] = [
      ['none', { size: null, overlap: 0 }],
      ['256/16', { size: 256, overlap: 16 }],
    ];
    for (const [label, spec] of specs) {
      let a: Chunk[] = [];
      let b: Chunk[] = [];
      const [tOld, tNew] = alternated(
        reps,
        () => void (a = chunkDocuments(docs, spec, cl100kTokenizer({ cut: 'regex' }))),
        () => void (b = chunkDocuments(docs, spec, cl100kTokenizer({ cut: 'scanner' }))),
      );
      const equal = a.length === b.length && a.every((c, i) => key(c) === key(b[i]!));
      rows.push(
        `| ${corpus.name} | chunkDocuments ${label}, cold memo: s (${a.length} chunks) | ${fmt(tOld)} | ${fmt(tNew)} | ${(tOld / tNew).toFixed(2)} | ${equal} |`,
      );
    }
  }
  process.stdout.write(`${rows.join('\n')}\n\n${reps} alternated repetitions each, medians.\n`);
  process.stderr.write(`loadavg after: ${readFileSync('/proc/loadavg', 'utf8')}`);
}

main().catch((e: unknown) => {
  process.stderr.write(`${String((e as Error).stack ?? e)}\n`);
  process.exit(1);
});
