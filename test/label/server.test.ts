/**
 * The label server without a browser (src/label/server.ts): the token, a port in use, a pool from another corpus, a
 * judgments log cut mid-line, resume, undo, two assessors' kappa, and a conflicting grade at merge. Servers listen
 * on 127.0.0.1 and stop inside each test.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { judgmentsLogPath, readJudgments } from '../../src/label/formats.js';
import { startLabelServer, type LabelState } from '../../src/label/server.js';
import { rejection } from '../helpers/errors.js';
import { labelFixture } from './fixture.js';

const PAIRS: [string, string][] = [['q1', 'b.md'], ['q1', 'c.md'], ['q2', 'a.md'], ['q2', 'c.md']];

async function post(url: string, route: string, body: unknown): Promise<LabelState> {
  const u = new URL(url);
  const r = await fetch(`${u.origin}${route}${u.search}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(r.status).toBe(200);
  return (await r.json()) as LabelState;
}

describe('label server', () => {
  it('refuses requests without the right token with 403', async () => {
    const f = labelFixture(PAIRS);
    const s = await startLabelServer({ pool: f.pool, labels: f.labels, assessor: 'alice' });
    try {
      const base = `http://127.0.0.1:${s.port}`;
      expect((await fetch(`${base}/`)).status).toBe(403);
      expect((await fetch(`${base}/api/state?token=${'0'.repeat(32)}`)).status).toBe(403);
      expect((await fetch(`${base}/api/state`, { headers: { 'x-label-token': s.token } })).status).toBe(200);
      const page = await fetch(s.url);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    } finally {
      await s.close();
    }
  });

  it('a port in use is an error naming the port and suggesting --port 0', async () => {
    const f = labelFixture(PAIRS);
    const a = await startLabelServer({ pool: f.pool, labels: f.labels, assessor: 'alice' });
    try {
      const e = await rejection(startLabelServer({ pool: f.pool, labels: f.labels, assessor: 'bob', port: a.port }));
      expect(e.code).toBe('USAGE');
      expect(e.message).toContain(`port ${a.port}`);
      expect(e.remedy).toContain('--port 0');
    } finally {
      await a.close();
    }
  });

  it('a pool made from another corpus is refused', async () => {
    const f = labelFixture(PAIRS, 'f'.repeat(64));
    const e = await rejection(startLabelServer({ pool: f.pool, labels: f.labels, assessor: 'alice' }));
    expect(e.code).toBe('LABEL_INVALID');
    expect(e.location.file).toBe(f.pool);
  });

  it('grades, undo, resume after a restart and a log cut mid-line; two assessors give a kappa', async () => {
    const f = labelFixture(PAIRS);
    const log = judgmentsLogPath(f.labels);
    let s = await startLabelServer({ pool: f.pool, labels: f.labels, assessor: 'alice' });
    let st = await post(s.url, '/api/grade', { pair: 1, grade: 0 });
    expect(st.pair?.pair).toBe(2);
    st = await post(s.url, '/api/grade', { pair: 2, grade: 2 });
    st = await post(s.url, '/api/undo', {});
    expect([st.pair?.pair, st.graded]).toEqual([2, 1]);
    st = await post(s.url, '/api/grade', { pair: 2, grade: 1 });
    st = await post(s.url, '/api/skip', { pair: 3 });
    expect(st.pair?.pair).toBe(4);
    await s.close();
    appendFileSync(log, '{"v":1,"time":"2026-12'); // a write cut by a kill
    s = await startLabelServer({ pool: f.pool, labels: f.labels, assessor: 'alice' });
    expect(s.warnings[0]).toContain('cut mid-write');
    st = s.state();
    expect([st.graded, st.pair?.pair]).toEqual([2, 3]); // resumes at the first pair without a grade (the skipped one)
    await s.close();
    const b = await startLabelServer({ pool: f.pool, labels: f.labels, assessor: 'bob' });
    await post(b.url, '/api/grade', { pair: 1, grade: 0 });
    st = await post(b.url, '/api/grade', { pair: 2, grade: 3 });
    // alice (0, 1) vs bob (0, 3) on a 0-3 scale, linear weights w = |i-j|/3: observed (1/2)(2/3) = 1/3;
    // marginals alice {0: 1/2, 1: 1/2}, bob {0: 1/2, 3: 1/2}: expected (1/4)(0 + 1 + 1/3 + 2/3) = 1/2; kappa 1 - (1/3)/(1/2).
    expect(st.agreement).toHaveLength(1);
    expect(st.agreement[0].weightedKappa).toBeCloseTo(1 - (1 / 3) / (1 / 2), 10);
    await b.close();
    expect(readJudgments(log).judgments.filter((j) => j.action === 'grade')).toHaveLength(5);
  });

  it('merge writes new grades and keeps a conflicting one apart', async () => {
    const f = labelFixture([['q1', 'a.md'], ['q1', 'b.md']]); // q1 already grades a.md 3
    const s = await startLabelServer({ pool: f.pool, labels: f.labels, assessor: 'alice' });
    try {
      await post(s.url, '/api/grade', { pair: 1, grade: 1 });
      await post(s.url, '/api/grade', { pair: 2, grade: 2 });
      const m = s.merge();
      expect([m.added, m.conflicts.length]).toEqual([1, 1]);
      expect(readFileSync(f.labels, 'utf8').split('\n')[0]).toBe('{"id": "q1", "question": "How long do refunds take?", "relevant": {"a.md": 3, "b.md": 2}}');
      expect(JSON.parse(readFileSync(m.conflictsFile, 'utf8'))).toMatchObject({ qid: 'q1', doc: 'a.md', existing: 3, proposed: 1 });
    } finally {
      await s.close();
    }
  });
});
