/** Strict answer parsing (never a guess), placeholder filling, and the chat config file's validation. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { chatCacheKey } from '../../src/llm/cache.js';
import { loadChatConfigFile, resolveChatOptions } from '../../src/llm/options.js';
import { fillPrompt, firstJsonObject, parseFinalScore, parseQuestionsAnswer } from '../../src/llm/prompts.js';
import { thrown } from '../helpers/errors.js';

describe('parseFinalScore', () => {
  it('reads the LAST "##final score: N" line', () => {
    expect(parseFinalScore('##final score: 1\nOn reflection:\n##final score: 3')).toEqual({ ok: true, grade: 3 });
    expect(parseFinalScore('M=2 T=2\r\n## Final Score : 2  ')).toEqual({ ok: true, grade: 2 });
  });
  it('a missing line or a value other than a whole number 0..3 is not a grade', () => {
    expect(parseFinalScore('the score is 2')).toEqual({ ok: false, reason: 'no-score-line' });
    expect(parseFinalScore('##final score: 7')).toEqual({ ok: false, reason: 'out-of-range' });
    expect(parseFinalScore('##final score: 2.5')).toEqual({ ok: false, reason: 'out-of-range' });
    expect(parseFinalScore('##final score: two')).toEqual({ ok: false, reason: 'out-of-range' });
    // the last line decides, even when an earlier one was valid
    expect(parseFinalScore('##final score: 2\n##final score: 4')).toEqual({ ok: false, reason: 'out-of-range' });
  });
});

describe('parseQuestionsAnswer', () => {
  it('reads the first JSON object, braces inside strings included', () => {
    expect(firstJsonObject('x {"a": "}{", "b": {"c": 1}} {"d": 2}')).toBe('{"a": "}{", "b": {"c": 1}}');
    expect(parseQuestionsAnswer('Sure:\n{"questions": ["how  long?", " ", "why {not}?"]} {"questions": ["later"]}')).toEqual(['how long?', 'why {not}?']);
  });
  it('anything else is unparsable', () => {
    expect(parseQuestionsAnswer('no json')).toBeUndefined();
    expect(parseQuestionsAnswer('{"questions": "one"}')).toBeUndefined();
    expect(parseQuestionsAnswer('{"questions": [1, 2]}')).toBeUndefined();
    expect(parseQuestionsAnswer('{"questions": ["cut')).toBeUndefined();
  });
});

describe('fillPrompt', () => {
  it('replaces each placeholder once; an inserted value is not scanned again', () => {
    expect(fillPrompt('Q: {question}\nP: {passage}\n{other}', { question: 'see {passage}', passage: 'text' })).toBe('Q: see {passage}\nP: text\n{other}');
  });
});

describe('chat cache key', () => {
  it('changes with every part: base URL, model, temperature, seed, max tokens, prompt, each input', () => {
    const base = { baseUrl: 'http://a/v1', model: 'm', temperature: 0, seed: null, maxTokens: null, promptSha: 'p', inputs: ['q', 'x'] };
    const k = chatCacheKey(base);
    const variants = [
      { baseUrl: 'http://b/v1' },
      { model: 'n' },
      { temperature: 0.5 },
      { seed: 1 },
      { maxTokens: 10 },
      { promptSha: 'p2' },
      { inputs: ['q', 'y'] },
      { inputs: ['qx', ''] },
    ];
    for (const v of variants) expect(chatCacheKey({ ...base, ...v })).not.toBe(k);
    expect(chatCacheKey({ ...base })).toBe(k);
  });
});

describe('chat config file', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'rs-chatcfg-'));
  it('an unknown key is named with the nearest known key', () => {
    const f = path.join(dir, 'a.yaml');
    writeFileSync(f, 'concurency: 2\ntemperature: 0\n');
    const e = thrown(() => loadChatConfigFile(f));
    expect(e.code).toBe('CONFIG_INVALID');
    expect(e.message).toContain('concurency: unknown key');
    expect(e.message).toContain('did you mean concurrency?');
  });
  it('flags win over the file; a missing model or address is a usage error', () => {
    const f = path.join(dir, 'b.json');
    writeFileSync(f, '{"model": "openai-chat:a", "baseUrl": "http://x/v1", "seed": 3}');
    const o = resolveChatOptions(loadChatConfigFile(f), { model: 'openai-chat:b' });
    expect(o.model).toBe('openai-chat:b');
    expect(o.baseUrl).toBe('http://x/v1');
    expect(o.seed).toBe(3);
    expect(thrown(() => resolveChatOptions(undefined, { model: 'openai-chat:b' })).code).toBe('USAGE');
  });
});
