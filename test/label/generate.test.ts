/**
 * `generate` through the fake chat server (test/helpers/fake-server.ts: question i of a passage = the first 6 words of
 * its sentence i, then `?`): evidence spans, tags, filters counted, human lines untouched, lines that load with the
 * dataset's own loader, a warm rerun that sends no request, and `--questions 0` refused before any work.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { copiedRun, normaliseQuestion } from '../../src/label/generate.js';
import { loadDataset } from '../../src/load/dataset.js';
import { startFakeServer, type FakeServer } from '../helpers/fake-server.js';

const DOCS: Record<string, string> = {
  'a.md': 'Refunds take ten days. Refunds take ten days.',
  'b.md': 'Pumps hum. Filters clog.',
  'c.md': 'Orders ship daily from Berlin warehouses now. Tracking links arrive by email within hours.',
};
const HUMAN = '{"id": "h1", "question": "How long do refunds take?", "relevant": {"a.md": 2}}\n';

function makeDataset(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'rs-gen-'));
  mkdirSync(path.join(dir, 'docs'));
  for (const [id, text] of Object.entries(DOCS)) writeFileSync(path.join(dir, 'docs', id), text);
  writeFileSync(path.join(dir, 'questions.jsonl'), HUMAN);
  return dir;
}

const servers: FakeServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(['node', 'retrieval-sweep', ...args], { stdout: (s) => void (out += s), stderr: (s) => void (err += s) });
  return { code, out, err };
}

describe('generate', () => {
  it('writes questions with their passage as evidence, counts filters, keeps human lines, and a rerun sends nothing', async () => {
    const s = await startFakeServer();
    servers.push(s);
    const dir = makeDataset();
    const out = path.join(dir, 'questions.jsonl');
    const args = ['generate', dir, '--model', 'openai-chat:m', '--base-url', `${s.url}/v1`, '--cache-dir', path.join(dir, '.cache'), '--out', out];
    const flags = ['--questions', '6', '--per-document', '2', '--chunk-size', 'none', '--styles', 'keyword,paraphrase', '--json'];
    const r = await cli([...args, ...flags]);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const sum = JSON.parse(r.out) as { written: number; passages: number; filters: Record<string, number>; usage: { requests: number } };
    expect(sum.passages).toBe(3); // 6 questions / 2 per document
    expect(sum.usage.requests).toBe(1 + 3); // probe + one per passage
    // a.md repeats its sentence: its second question is a duplicate
    expect(sum.filters.duplicate).toBe(1);
    expect(sum.written).toBe(5);
    // copied runs: a.md 4 of 4 words, c.md 6 of 6 twice; b.md's two-word questions stay below 4 words
    expect(sum.filters.highOverlap).toBe(3);

    const text = readFileSync(out, 'utf8');
    expect(text.startsWith(HUMAN)).toBe(true);
    const lines = text.trim().split('\n').slice(1).map((l) => JSON.parse(l) as { id: string; question: string; tags: string[]; evidence: { doc: string; start: number; end: number }[] });
    expect(lines).toHaveLength(5);
    for (const l of lines) {
      expect(l.id).toMatch(/^syn-[0-9a-f]{16}$/);
      expect(l.tags[0]).toBe('synthetic');
      expect(l.tags.filter((t) => t === 'keyword' || t === 'paraphrase')).toHaveLength(1);
      expect(l.evidence).toEqual([{ doc: l.evidence[0].doc, start: 0, end: DOCS[l.evidence[0].doc].length }]);
    }
    const byDoc = (d: string) => lines.filter((l) => l.evidence[0].doc === d).map((l) => l.question);
    expect(byDoc('a.md')).toEqual(['refunds take ten days?']);
    expect(byDoc('b.md')).toEqual(['pumps hum?', 'filters clog?']);
    expect(byDoc('c.md')).toEqual(['orders ship daily from berlin warehouses?', 'tracking links arrive by email within?']);
    expect(lines.filter((l) => l.tags.includes('high-overlap')).map((l) => l.evidence[0].doc).sort()).toEqual(['a.md', 'c.md', 'c.md']);

    // the dataset's own loader (strict) reads every line, evidence located in its document
    const ds = await loadDataset({ path: dir });
    expect(ds.questions).toHaveLength(6);
    expect(ds.questions.find((q) => q.text === 'pumps hum?')!.relevant).toEqual({ 'b.md': 1 });

    const sent = s.requests.length;
    const again = await cli([...args, ...flags]);
    expect(again.code).toBe(0);
    expect(s.requests.length - sent).toBe(0);
    expect((JSON.parse(again.out) as { written: number }).written).toBe(0);
    expect(readFileSync(out, 'utf8')).toBe(text);
  });

  it('--questions 0 is a usage error naming the value, before any request or write', async () => {
    const s = await startFakeServer();
    servers.push(s);
    const dir = makeDataset();
    const out = path.join(dir, 'new.jsonl');
    const r = await cli(['generate', dir, '--model', 'openai-chat:m', '--base-url', `${s.url}/v1`, '--cache-dir', path.join(dir, '.cache'), '--out', out, '--questions', '0']);
    expect(r.code).toBe(2);
    expect(r.err).toContain('--questions must be a whole number ≥ 1 (got 0)');
    expect(s.requests).toHaveLength(0);
    expect(existsSync(out)).toBe(false);
  });

  it('an answer unparsable twice is counted, and no question is made up for it', async () => {
    const s = await startFakeServer({
      faults: [
        { kind: 'answer', content: 'Here: questions are "a", "b".' },
        { kind: 'answer', content: '{"questions": "not a list"}' },
      ],
      faultFilter: (_p, body) => JSON.stringify(body.messages).includes('questions'),
    });
    servers.push(s);
    const dir = makeDataset();
    const out = path.join(dir, 'gen.jsonl');
    const r = await cli(['generate', dir, '--model', 'openai-chat:m', '--base-url', `${s.url}/v1`, '--cache-dir', path.join(dir, '.cache'), '--out', out, '--questions', '1', '--chunk-size', 'none', '--json']);
    expect(r.code).toBe(0);
    const sum = JSON.parse(r.out) as { written: number; filters: { unparsable: number }; parseRetries: number };
    expect(sum.filters.unparsable).toBe(1);
    expect(sum.parseRetries).toBe(1);
    expect(sum.written).toBe(0);
    expect(existsSync(out)).toBe(false);
  });
});

describe('filters', () => {
  it('normalised text and the longest copied run', () => {
    expect(normaliseQuestion('  How LONG, do refunds take?? ')).toBe('how long do refunds take');
    // "take ten days" is the longest run shared with the passage: 3 of 5 words
    expect(copiedRun('do refunds take ten days', 'Refunds will take ten days.')).toEqual({ share: 3 / 5, run: 3 });
    expect(copiedRun('', 'x')).toEqual({ share: 0, run: 0 });
  });
});

describe('generate --check-with-judge', () => {
  it('drops the questions the judge grades below 2 against their passage', async () => {
    const s = await startFakeServer();
    servers.push(s);
    const dir = makeDataset();
    const out = path.join(dir, 'checked.jsonl');
    const r = await cli(['generate', dir, '--model', 'openai-chat:m', '--base-url', `${s.url}/v1`, '--cache-dir', path.join(dir, '.cache'), '--out', out, '--questions', '6', '--per-document', '2', '--chunk-size', 'none', '--check-with-judge', '--json']);
    expect(r.code).toBe(0);
    const sum = JSON.parse(r.out) as { written: number; filters: { judgedBelow2: number; duplicate: number }; usage: { requests: number } };
    // fake judge: words of 4+ letters shared with the passage; "pumps hum?" shares only "pumps" (grade 1)
    expect(sum.filters.duplicate).toBe(1);
    expect(sum.filters.judgedBelow2).toBe(1);
    expect(sum.written).toBe(4);
    expect(sum.usage.requests).toBe(1 + 3 + 5); // probe, 3 passages, 5 candidates judged
    expect(readFileSync(out, 'utf8')).not.toContain('pumps hum?');
  });
});
