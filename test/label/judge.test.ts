/**
 * The LLM judge end to end against a chat server inside this process (test/helpers/fake-server.ts): grades worked out
 * by hand from the fake model's rule (distinct words of ≥ 4 letters shared by question and passage, capped at 3),
 * faults (429 + Retry-After, 500, a slow answer past the timeout, a reset, an unparsable answer, a grade out of range)
 * that must not change a label, the cache (a warm rerun sends no request), the key in no file, and clear errors
 * before any work (401, 404, nothing listening, a prompt without its placeholder).
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { judgmentsLogPath, readJudgments, resolveLabels, writePool, type Judgment, type PoolHeader, type PoolPair } from '../../src/label/formats.js';
import { calibrate, calibrationSample, datasetGrades, decisionQrels, LOW_AGREEMENT, runJudge } from '../../src/label/judge.js';
import { ChatCache } from '../../src/llm/cache.js';
import { ChatClient, type ChatOptions } from '../../src/llm/chat.js';
import { DEFAULT_JUDGE_PROMPT, JUDGE_PLACEHOLDERS, loadPrompt } from '../../src/llm/prompts.js';
import { rejection, thrown } from '../helpers/errors.js';
import { startFakeServer, type FakeServer } from '../helpers/fake-server.js';

const tmp = () => mkdtempSync(path.join(tmpdir(), 'rs-judge-'));

/** [question, passage, grade by the fake model's rule] */
const CASES: [string, string, number][] = [
  ['How long does a card refund take', 'Card refunds take five business days.', 2], // card, take
  ['How long does a card refund take', 'Shipping is free above fifty euros.', 0],
  ['reset password email link', 'To reset your password, open the email link we send.', 3], // 4 shared, capped
  ['reset password email link', 'Your password must have twelve characters.', 1], // password
  ['pump warranty length', 'The pump warranty lasts two years.', 2], // pump, warranty
  ['pump warranty length', 'Pumps are shipped in boxes.', 0], // pumps is not pump
];
const EXPECTED = CASES.map((c) => c[2]);

function makePool(dir: string): { file: string; header: PoolHeader; pairs: PoolPair[] } {
  const pairs: PoolPair[] = CASES.map(([question, passage], i) => ({
    pair: i + 1,
    qid: `q${Math.floor(i / 2) + 1}`,
    question,
    doc: `d${i + 1}.md`,
    start: 0,
    end: passage.length,
    passage,
    rows: ['none.keyword.k10'],
    bestRank: 1 + (i % 2),
  }));
  const header: PoolHeader = {
    format: 'retrieval-sweep.pool',
    version: 1,
    dataset: { name: 'fixture', root: path.join(dir, 'no-such-dataset'), corpus: 'c'.repeat(64) },
    results: path.join(dir, 'results'),
    level: 'document',
    depth: 10,
    rows: ['none.keyword.k10'],
    pairs: pairs.length,
    threshold: 1,
  };
  const file = path.join(dir, 'pool.jsonl');
  writePool(file, header, pairs);
  return { file, header, pairs };
}

const servers: FakeServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});
async function server(o: Parameters<typeof startFakeServer>[0] = {}): Promise<FakeServer> {
  const s = await startFakeServer(o);
  servers.push(s);
  return s;
}

// timeoutMs well above a loaded machine's answer time (CI's 2 cores are busy), well below the slow fault's delay.
const fast = { backoffBaseMs: 1, backoffMaxMs: 5, timeoutMs: 1500, concurrency: 2 };

async function judgeOnce(s: FakeServer, dir: string, extra: Partial<ChatOptions> = {}) {
  const { header, pairs } = makePool(dir);
  const client = new ChatClient({ model: 'openai-chat:m', baseUrl: `${s.url}/v1`, ...fast, ...extra });
  const cache = ChatCache.open(path.join(dir, 'cache', 'chat.sqlite'));
  const labelsFile = path.join(dir, 'questions.jsonl');
  try {
    const summary = await runJudge({
      header,
      pairs,
      labelsFile,
      client,
      cache,
      prompt: loadPrompt(undefined, DEFAULT_JUDGE_PROMPT, JUDGE_PLACEHOLDERS),
    });
    return { summary, labelsFile, pairs };
  } finally {
    cache.close();
  }
}

const gradesOf = (labelsFile: string, pairs: PoolPair[]) => {
  const byKey = new Map(resolveLabels(readJudgments(judgmentsLogPath(labelsFile)).judgments).map((l) => [`${l.qid} ${l.doc}`, l]));
  return pairs.map((p) => byKey.get(`${p.qid} ${p.doc}`)?.grade);
};

describe('judge through a chat server', () => {
  it('grades every pair as worked out by hand; a warm rerun sends no request and appends nothing', async () => {
    const s = await server();
    const dir = tmp();
    const first = await judgeOnce(s, dir);
    expect(gradesOf(first.labelsFile, first.pairs)).toEqual(EXPECTED);
    expect(first.summary.grades).toEqual([2, 1, 2, 1]);
    expect(first.summary.asked).toBe(6);
    expect(first.summary.usage.requests).toBe(1 + 6); // probe + one per pair
    const log = readJudgments(judgmentsLogPath(first.labelsFile)).judgments;
    expect(log).toHaveLength(6);
    expect(log.every((j) => j.assessor === 'llm:m' && j.action === 'grade')).toBe(true);

    const sent = s.requests.length;
    const warm = await judgeOnce(s, dir);
    expect(s.requests.length - sent).toBe(0);
    expect(warm.summary.cached).toBe(6);
    expect(warm.summary.appended).toBe(0);
    expect(readJudgments(judgmentsLogPath(first.labelsFile)).judgments).toHaveLength(6);
    expect(gradesOf(warm.labelsFile, warm.pairs)).toEqual(EXPECTED);

    // the same cache for a new labels file: no request, every cached grade written to the new log
    const dir2 = tmp();
    mkdirSync(path.join(dir2, 'cache'));
    copyFileSync(path.join(dir, 'cache', 'chat.sqlite'), path.join(dir2, 'cache', 'chat.sqlite'));
    const fresh = await judgeOnce(s, dir2);
    expect(s.requests.length - sent).toBe(0);
    expect(fresh.summary.appended).toBe(6);
    expect(gradesOf(fresh.labelsFile, fresh.pairs)).toEqual(EXPECTED);
  });

  it('the faults change no label: 429 + Retry-After, 500, slow past the timeout, reset, unparsable, out of range', async () => {
    const s = await server({
      faults: [
        { kind: 'status', status: 429, retryAfter: '0' },
        { kind: 'none' },
        { kind: 'status', status: 500 },
        { kind: 'none' },
        { kind: 'slow', ms: 5000 },
        { kind: 'none' },
        { kind: 'reset' },
        { kind: 'none' },
        { kind: 'answer', content: 'The passage seems relevant.' },
        { kind: 'none' },
        { kind: 'answer', content: 'Thinking...\n##final score: 7' },
      ],
      faultFilter: (_p, body) => JSON.stringify(body.messages).includes('##final score'),
    });
    const dir = tmp();
    // one request at a time, so each fault meets a different pair and every retry gets a clean answer
    const r = await judgeOnce(s, dir, { concurrency: 1 });
    expect(gradesOf(r.labelsFile, r.pairs)).toEqual(EXPECTED);
    expect(r.summary.failed).toBe(0);
    expect(r.summary.parseRetries).toBe(2);
    expect(r.summary.usage.retries).toBe(4); // 429, 500, timeout, reset
    expect(r.summary.usage.requests).toBe(1 + 6 + 4 + 2);
  });

  it('an answer unparsable twice is a failed judgment with its raw text, never a guessed grade; the next run asks again', async () => {
    const s = await server({
      faults: [
        { kind: 'answer', content: 'I would say two.' },
        { kind: 'answer', content: 'Still two-ish.' },
      ],
      faultFilter: (_p, body) => JSON.stringify(body.messages).includes('##final score'),
    });
    const dir = tmp();
    const r = await judgeOnce(s, dir, { concurrency: 1 });
    expect(r.summary.failed).toBe(1);
    const log = readJudgments(judgmentsLogPath(r.labelsFile)).judgments;
    const failed = log.filter((j) => j.action === 'failed');
    expect(failed).toHaveLength(1);
    expect(failed[0].raw).toBe('Still two-ish.');
    expect(failed[0].qid).toBe('q1');
    expect(failed[0].doc).toBe('d1.md');
    expect(gradesOf(r.labelsFile, r.pairs)).toEqual([undefined, ...EXPECTED.slice(1)]);
    const again = await judgeOnce(s, dir);
    expect(again.summary.asked).toBe(1);
    expect(gradesOf(r.labelsFile, r.pairs)).toEqual(EXPECTED);
  });

  it('a model the server does not serve (404) is one LLM_FAILED naming the model, before any work', async () => {
    const s = await server({ models: ['m'] });
    const dir = tmp();
    const { header, pairs } = makePool(dir);
    const client = new ChatClient({ model: 'openai-chat:no-such-model', baseUrl: `${s.url}/v1`, ...fast });
    const cache = ChatCache.open(path.join(dir, 'cache', 'chat.sqlite'));
    const labelsFile = path.join(dir, 'questions.jsonl');
    const e = await rejection(runJudge({ header, pairs, labelsFile, client, cache, prompt: loadPrompt(undefined, DEFAULT_JUDGE_PROMPT, JUDGE_PLACEHOLDERS) }));
    cache.close();
    expect(e.code).toBe('LLM_FAILED');
    expect(e.message).toContain('HTTP 404');
    expect(e.message).toContain('no-such-model');
    expect(e.remedy).toContain('model name');
    expect(s.requests).toHaveLength(1);
    expect(existsSync(judgmentsLogPath(labelsFile))).toBe(false);
  });

  it('nothing listening at the address is one LLM_FAILED saying so, not retried', async () => {
    const s = await startFakeServer();
    const url = s.url;
    await s.close();
    const dir = tmp();
    const { header, pairs } = makePool(dir);
    const client = new ChatClient({ model: 'openai-chat:m', baseUrl: `${url}/v1`, ...fast });
    const cache = ChatCache.open(path.join(dir, 'chat.sqlite'));
    const e = await rejection(
      runJudge({ header, pairs, labelsFile: path.join(dir, 'l.jsonl'), client, cache, prompt: loadPrompt(undefined, DEFAULT_JUDGE_PROMPT, JUDGE_PLACEHOLDERS) }),
    );
    cache.close();
    expect(e.code).toBe('LLM_FAILED');
    expect(e.remedy).toContain('nothing answers');
    expect(client.stats().retries).toBe(0);
  });

  it('a prompt file without {passage} is CONFIG_INVALID naming the placeholder and the file', () => {
    const dir = tmp();
    const f = path.join(dir, 'prompt.txt');
    writeFileSync(f, 'Grade {question}.\n##final score: N');
    const e = thrown(() => loadPrompt(f, DEFAULT_JUDGE_PROMPT, JUDGE_PLACEHOLDERS));
    expect(e.code).toBe('CONFIG_INVALID');
    expect(e.message).toContain('{passage}');
    expect(e.message).not.toContain('{question}');
    expect(e.location.file).toBe(f);
  });
});

describe('judge command', () => {
  const KEY = 'sk-test-0123456789-secret';

  function listFiles(dir: string): string[] {
    return readdirSync(dir).flatMap((n) => {
      const p = path.join(dir, n);
      return statSync(p).isDirectory() ? listFiles(p) : [p];
    });
  }

  it('through the CLI: the API key is in no written file and no output; 401 with a wrong key is exit 1 before any work', async () => {
    const s = await server({ apiKey: KEY });
    const dir = tmp();
    const { file } = makePool(dir);
    const cfg = path.join(dir, 'chat.yaml');
    writeFileSync(cfg, 'concurrency: 2\ntimeoutMs: 2000\nbackoffBaseMs: 1\npricePer1kInput: 0.5\npricePer1kOutput: 1.5\n');
    const labels = path.join(dir, 'labels', 'questions.jsonl');
    const args = ['judge', file, '--model', 'openai-chat:m', '--base-url', `${s.url}/v1`, '--api-key-env', 'RS_JUDGE_TEST_KEY', '--cache-dir', path.join(dir, 'cache'), '--config', cfg, '--labels', labels];
    let out = '';
    let err = '';
    const io = { stdout: (x: string) => void (out += x), stderr: (x: string) => void (err += x) };
    process.env.RS_JUDGE_TEST_KEY = KEY;
    try {
      mkdirSync(path.dirname(labels), { recursive: true });
      // judge checks --labels before any request: the labels files exist (empty questions.jsonl files).
      writeFileSync(labels, '');
      writeFileSync(path.join(dir, 'labels', 'other.jsonl'), '');
      expect(await runCli(['node', 'retrieval-sweep', ...args, '--json'], io)).toBe(0);
      const summary = JSON.parse(out) as { graded: number; usage: { tokensIn: number; tokensOut: number; cost: number } };
      expect(summary.graded).toBe(6);
      const u = summary.usage;
      expect(u.cost).toBeCloseTo((u.tokensIn / 1000) * 0.5 + (u.tokensOut / 1000) * 1.5, 10);
      for (const f of listFiles(dir)) expect(readFileSync(f).includes(Buffer.from(KEY)), f).toBe(false);
      expect(out + err).not.toContain(KEY);

      process.env.RS_JUDGE_TEST_KEY = 'sk-wrong-key-42';
      out = '';
      err = '';
      const before = s.requests.length;
      const labels2 = path.join(dir, 'labels', 'other.jsonl');
      const args2 = args.map((a) => (a === labels ? labels2 : a === path.join(dir, 'cache') ? path.join(dir, 'cache2') : a));
      expect(await runCli(['node', 'retrieval-sweep', ...args2], io)).toBe(1);
      expect(err).toContain('HTTP 401');
      expect(err).toContain('RS_JUDGE_TEST_KEY');
      expect(err).not.toContain('sk-wrong-key-42');
      expect(s.requests.length - before).toBe(1);
      expect(existsSync(judgmentsLogPath(labels2))).toBe(false);
    } finally {
      delete process.env.RS_JUDGE_TEST_KEY;
    }
  });
});

describe('calibration', () => {
  const j = (assessor: string, doc: string, grade: number): Judgment => ({
    v: 1,
    time: '2026-12-03T00:00:00.000Z',
    assessor,
    action: 'grade',
    qid: 'q1',
    doc,
    start: 0,
    end: 10,
    grade,
  });

  it('matrix, linear-weighted kappa and binary agreement on the pairs a person and the model both graded', () => {
    const model = [2, 0, 3, 1];
    const person = [2, 1, 3, 0];
    const log = [...model.map((g, i) => j('llm:m', `d${i}`, g)), ...person.map((g, i) => j('alice', `d${i}`, g)), j('llm:m', 'd9', 3)];
    const c = calibrate(log, 'llm:m', new Map(), 1);
    expect(c.n).toBe(4);
    expect(c.sources).toEqual({ log: 4, dataset: 0 });
    const a = c.agreement!;
    expect(a.matrix).toEqual([
      [0, 1, 0, 0],
      [1, 0, 0, 0],
      [0, 0, 1, 0],
      [0, 0, 0, 1],
    ]);
    // observed weighted disagreement (1/3 + 1/3)/4; expected with uniform marginals: sum |i-j|/3 over 4x4 / 16
    const observed = (1 / 3 + 1 / 3) / 4;
    const expected = (2 * (1 * 3 + 2 * 2 + 3 * 1)) / 3 / 16;
    expect(a.weightedKappa).toBeCloseTo(1 - observed / expected, 10);
    expect(a.binaryAgreement).toBeCloseTo(2 / 4, 10); // relevant at >= 1: person 1,1,1,0 vs model 1,0,1,1
    expect(c.lowAgreement).toBe(false);
  });

  it('says plainly when weighted kappa is below 0.4, and uses dataset grades where the log has none', () => {
    const log = [0, 3, 0, 3].map((g, i) => j('llm:m', `d${i}`, g));
    const ds = new Map([0, 1, 2, 3].map((i) => [`q1\u0000d${i}\u00000\u000010`, [3, 0, 3, 0][i]] as [string, number]));
    const c = calibrate(log, 'llm:m', ds, 1);
    expect(c.sources).toEqual({ log: 0, dataset: 4 });
    expect(c.agreement!.weightedKappa).toBeLessThan(0.4);
    expect(c.lowAgreement).toBe(true);
    expect(c.verdict).toContain(LOW_AGREEMENT);
  });

  it('with no person grade says agreement is unknown', () => {
    const c = calibrate([j('llm:m', 'd0', 2)], 'llm:m', new Map(), 1);
    expect(c.n).toBe(0);
    expect(c.agreement).toBeNull();
    expect(c.verdict).toContain('unknown');
  });
});


describe('calibration sample and decision qrels', () => {
  const mk = (n: number): PoolPair[] =>
    Array.from({ length: n }, (_, i) => ({ pair: i + 1, qid: 'q', question: 'x', doc: `d${i}`, start: 0, end: 1, passage: 'p', rows: [], bestRank: 1 }));

  it('takes round-robin over the model grades, leaves out pairs a person graded, renumbers in queue order', () => {
    const pairs = mk(8);
    // grades: d0..d4 -> 0, d5 -> 1, d6 -> 3, d7 -> 3; nobody got 2
    const grades = [0, 0, 0, 0, 0, 1, 3, 3];
    const model = new Map(pairs.map((p, i) => [`q\u0000d${i}\u00000\u00001`, grades[i]] as [string, number]));
    const graded = new Set([`q\u0000d6\u00000\u00001`]);
    const s = calibrationSample(pairs, model, graded, { n: 4 }, () => 0);
    // round 1: one of grade 0, d5 (grade 1), d7 (grade 3, d6 left out); round 2: a second of grade 0
    expect(s).toHaveLength(4);
    expect(s.map((p) => p.pair)).toEqual([1, 2, 3, 4]);
    const docs = s.map((p) => p.doc);
    expect(docs.filter((d) => ['d0', 'd1', 'd2', 'd3', 'd4'].includes(d))).toHaveLength(2);
    expect(docs).toContain('d5');
    expect(docs).toContain('d7');
    expect(docs).not.toContain('d6');
  });

  it('decision qrels: persons over the dataset, the model only where nobody graded', () => {
    const jj = (assessor: string, doc: string, grade: number): Judgment => ({ v: 1, time: 't', assessor, action: 'grade', qid: 'q1', doc, start: 0, end: 1, grade });
    const q = decisionQrels(
      { questions: [{ id: 'q1', text: 'x', relevant: { a: 2 }, evidence: [], tags: [], line: 1 }] },
      [jj('llm:m', 'a', 0), jj('llm:m', 'b', 3), jj('alice', 'c', 1), jj('llm:m', 'c', 0)],
      'llm:m',
    );
    expect([...q.human.get('q1')!]).toEqual([['a', 2], ['c', 1]]);
    expect([...q.withModel.get('q1')!]).toEqual([['a', 2], ['c', 1], ['b', 3]]);
    expect(q.modelAdded).toBe(1);
  });
});

describe('interrupted and mismatched runs', () => {
  it('a request the server refuses for its content (HTTP 400) fails that pair with the message; the rest is graded', async () => {
    const s = await server({
      faults: [{ kind: 'status', status: 400, body: '{"error": {"message": "maximum context length is 8192 tokens"}}' }],
      faultFilter: (_p, body) => JSON.stringify(body.messages).includes('##final score'),
    });
    const dir = tmp();
    const r = await judgeOnce(s, dir, { concurrency: 1 });
    expect(r.summary.failed).toBe(1);
    expect(r.summary.rejected).toBe(1);
    expect(r.summary.graded).toBe(5);
    const failed = readJudgments(judgmentsLogPath(r.labelsFile)).judgments.filter((j) => j.action === 'failed');
    expect(failed.map((j) => j.doc)).toEqual(['d1.md']);
    expect(failed[0].raw).toContain('HTTP 400');
    expect(failed[0].raw).toContain('maximum context length');
    expect(gradesOf(r.labelsFile, r.pairs)).toEqual([undefined, ...EXPECTED.slice(1)]);
  });

  it('a run that fails mid-pool keeps what was answered; the rerun asks only the rest and duplicates no line', async () => {
    // probe + 3 answers, then 500s the client does not retry (maxRetries 0)
    const s = await server({ faults: [{ kind: 'none' }, { kind: 'none' }, { kind: 'none' }, { kind: 'none' }, ...Array.from({ length: 10 }, () => ({ kind: 'status' as const, status: 500 }))] });
    const dir = tmp();
    const e = await rejection(judgeOnce(s, dir, { concurrency: 1, maxRetries: 0 }));
    expect(e.code).toBe('LLM_FAILED');
    const labelsFile = path.join(dir, 'questions.jsonl');
    expect(readJudgments(judgmentsLogPath(labelsFile)).judgments).toHaveLength(3);
    s.faults.splice(0);
    const again = await judgeOnce(s, dir, { concurrency: 1 });
    expect(again.summary.cached).toBe(3);
    expect(again.summary.asked).toBe(3);
    expect(readJudgments(judgmentsLogPath(labelsFile)).judgments).toHaveLength(6);
    expect(gradesOf(labelsFile, again.pairs)).toEqual(EXPECTED);
  });

  it('dataset grades: labels of pooled pairs are read; a pool whose passage differs from the dataset is refused', () => {
    const dir = tmp();
    const { header, pairs } = makePool(dir);
    const docs = pairs.map((p) => ({ id: p.doc, text: p.passage }));
    const ds = {
      name: 'x', root: dir, layout: 'folder' as const, docs, fingerprint: 'f', warnings: [],
      questions: [{ id: 'q1', text: 'x', relevant: { 'd1.md': 3, 'zzz.md': 1 }, evidence: [], tags: [], line: 1 }],
    };
    const g = datasetGrades(ds, header, pairs);
    expect([...g.values()]).toEqual([3]);
    const other = { ...ds, docs: docs.map((d, i) => (i === 2 ? { ...d, text: 'another text' } : d)) };
    const e = thrown(() => datasetGrades(other, header, pairs));
    expect(e.code).toBe('LABEL_INVALID');
    expect(e.message).toContain('pair 3');
    expect(e.message).toContain('the passage text differs');
    // a pooled document the dataset lacks
    const missing = thrown(() => datasetGrades({ ...ds, docs: docs.filter((_, i) => i !== 2) }, header, pairs));
    expect(missing.code).toBe('LABEL_INVALID');
    expect(missing.message).toContain('no such document');
  });
});
