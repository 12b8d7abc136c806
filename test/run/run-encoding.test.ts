/** Issue 24 §5: `runs:` reads back the percent-encoding the tool's own export uses (trecId). */
import { describe, expect, it } from 'vitest';
import { decodeRunIds, decodeTrecId, trecId } from '../../src/run/artifacts.js';

describe('decodeTrecId inverts trecId', () => {
  for (const id of ['plain.md', 'a doc.md', 'tab\there', '100%.md', 'wide\u3000space', 'x%41y', 'nbsp\u00a0id']) {
    it(JSON.stringify(id), () => {
      expect(decodeTrecId(trecId(id))).toBe(id);
    });
  }
  it('a % that encodes neither whitespace nor % is kept', () => {
    expect(decodeTrecId('50%41')).toBe('50%41');
  });
});

describe('decodeRunIds', () => {
  const run = new Map([
    ['q%201', [{ docno: 'a%20doc.md', score: 2 }, { docno: 'b.md', score: 1 }]],
    ['q2', [{ docno: 'x%20y.md', score: 1 }]],
  ]);
  it('decodes ids only when the raw id is unknown and the decoded one is known; counts them', () => {
    const { run: out, decoded } = decodeRunIds(run, new Set(['q 1', 'q2']), new Set(['a doc.md', 'b.md']));
    expect(decoded).toBe(2); // "q%201" and "a%20doc.md"; "x%20y.md" decodes to no known id and is kept
    expect([...out.keys()]).toEqual(['q 1', 'q2']);
    expect(out.get('q 1')!.map((e) => e.docno)).toEqual(['a doc.md', 'b.md']);
    expect(out.get('q2')!.map((e) => e.docno)).toEqual(['x%20y.md']);
  });
  it('a run with nothing to decode is returned as it is', () => {
    const plain = new Map([['q2', [{ docno: 'b.md', score: 1 }]]]);
    expect(decodeRunIds(plain, new Set(['q2']), new Set(['b.md']))).toEqual({ run: plain, decoded: 0 });
  });
});
