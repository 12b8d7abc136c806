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
 *   pass first; tokens per second = tokens of the corpus / median seconds; beside them, the scanner with the old
 *   `Map` memo (a slice per pre-token), to show what the cut and the memo each give (order rotated each repetition);
 * - `chunkDocuments` over SciFact, single thread, for `none` and 256/16, with a fresh tokenizer per repetition (cold
 *   memo, as a worker starts) and with one warmed tokenizer each (warm memo, as a worker deep into a large corpus),
 *   and whether the chunks (ids, start, end, tokens) are identical.
 * Prints a Markdown table on stdout; `cat /proc/loadavg` before and after on stderr. Default 7 repetitions.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Tiktoken } from 'js-tiktoken/lite';
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

    // count() with a warm memo: regex + Map (old), scanner + Map (the cut alone changed), scanner + PreTokenMemo (new).
    const oldTok = cl100kTokenizer({ cut: 'regex' });
    const newTok = cl100kTokenizer({ cut: 'scanner' });
    const encoding = new Tiktoken(cl100kBase);
    const map = new Map<string, number[]>();
    const midCount = (text: string): number => {
      let n = 0;
      for (let i = 0; i < text.length; ) {
        const e = nextPreTokenEnd(text, i);
        const pre = text.slice(i, e);
        let ids = map.get(pre);
        if (ids === undefined) map.set(pre, (ids = encoding.encode(pre, [], [])));
        n += ids.length;
        i = e;
      }
      return n;
    };
    const countAll = (count: (text: string) => number): number => docs.reduce((s, d) => s + count(d.text), 0);
    const tokens = countAll((t) => oldTok.count!(t));
    const countsEqual =
      tokens === countAll((t) => newTok.count!(t)) &&
      tokens === countAll(midCount) &&
      docs.every((d) => oldTok.count!(d.text) === newTok.count!(d.text));
    const times: [number[], number[], number[]] = [[], [], []];
    const variants = [() => countAll((t) => oldTok.count!(t)), () => countAll(midCount), () => countAll((t) => newTok.count!(t))];
    for (let r = 0; r < reps; r++) {
      for (let v = 0; v < 3; v++) {
        const which = (v + r) % 3; // rotate the order each repetition
        times[which].push(seconds(() => void variants[which]!()));
      }
    }
    const [countOld, countMid, countNew] = times.map(median) as [number, number, number];
    rows.push(
      `| ${corpus.name} | count(), warm memo: million tokens / s (${tokens} tokens) | ${fmt(tokens / countOld / 1e6)} | ${fmt(tokens / countNew / 1e6)} (scanner + Map: ${fmt(tokens / countMid / 1e6)}) | ${(countOld / countNew).toFixed(2)} | ${countsEqual} |`,
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
      // Warm: one tokenizer each, warmed by an untimed pass (a worker deep into a large corpus).
      const warmOld = cl100kTokenizer({ cut: 'regex' });
      const warmNew = cl100kTokenizer({ cut: 'scanner' });
      chunkDocuments(docs, spec, warmOld);
      chunkDocuments(docs, spec, warmNew);
      const [wOld, wNew] = alternated(
        reps,
        () => void (a = chunkDocuments(docs, spec, warmOld)),
        () => void (b = chunkDocuments(docs, spec, warmNew)),
      );
      const warmEqual = a.length === b.length && a.every((c, i) => key(c) === key(b[i]!));
      rows.push(
        `| ${corpus.name} | chunkDocuments ${label}, warm memo: s | ${fmt(wOld)} | ${fmt(wNew)} | ${(wOld / wNew).toFixed(2)} | ${warmEqual} |`,
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
