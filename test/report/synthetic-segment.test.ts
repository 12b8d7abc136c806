/** Generated questions (tag `synthetic`) get a counterpart segment, and the report says when their winner differs. */
import { describe, expect, it } from 'vitest';
import { analyze, NOT_SYNTHETIC } from '../../src/report/analyze.js';
import { question, row, spec, sweep } from './fixtures.js';

describe('synthetic questions beside the others', () => {
  const qs = [
    question('h1', { 'a.md': 1 }, ['paraphrase']),
    question('h2', { 'b.md': 1 }),
    question('s1', { 'a.md': 1 }, ['synthetic']),
    question('s2', { 'b.md': 1 }, ['synthetic', 'keyword']),
  ];

  it('the other questions form "(not synthetic)"; a different winner there is a warning naming both', () => {
    const keyword = row(spec({ k: 5 }), qs, { ndcg: [0.2, 0.4, 1, 1] });
    const semantic = row(spec({ k: 5, mode: 'semantic' }), qs, { ndcg: [0.8, 0.6, 0.1, 0.1] });
    const a = analyze(sweep(qs, [keyword, semantic]));
    const seg = a.segments!;
    const get = (name: string) => seg.segments.find((s) => s.kind === 'tag' && s.name === name)!;
    expect(get(NOT_SYNTHETIC).questions).toBe(2);
    expect(get(NOT_SYNTHETIC).best.id).toBe(semantic.config.id);
    expect(get(NOT_SYNTHETIC).best.value).toBeCloseTo((0.8 + 0.6) / 2, 10);
    expect(get('synthetic').best.id).toBe(keyword.config.id);
    expect(get('synthetic').best.value).toBeCloseTo((1 + 1) / 2, 10);
    const w = a.warnings.find((x) => x.includes('generated (synthetic) questions'));
    expect(w).toContain(keyword.config.id);
    expect(w).toContain(semantic.config.id);
  });

  it('no counterpart segment and no warning without synthetic questions, or when both agree', () => {
    const plain = qs.map((q) => ({ ...q, tags: q.tags.filter((t) => t !== 'synthetic') }));
    const a = analyze(sweep(plain, [row(spec({ k: 5 }), plain, { ndcg: [1, 1, 1, 1] })]));
    expect(a.segments!.segments.some((s) => s.name === NOT_SYNTHETIC)).toBe(false);
    const b = analyze(sweep(qs, [row(spec({ k: 5 }), qs, { ndcg: [1, 1, 1, 1] }), row(spec({ k: 5, mode: 'semantic' }), qs, { ndcg: [0, 0, 0, 0] })]));
    expect(b.warnings.some((x) => x.includes('generated (synthetic) questions'))).toBe(false);
  });
});
