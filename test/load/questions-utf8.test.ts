/** Issue 24 §5: invalid UTF-8 in questions.jsonl is warned about with its line numbers (documents already were). */
import { describe, expect, it } from 'vitest';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { invalidUtf8Warnings, loadDataset } from '../../src/load/dataset.js';

const here = path.dirname(new URL(import.meta.url).pathname);
const tiny = path.resolve(here, '../fixtures/sweep/tiny');

describe('questions.jsonl that is not valid UTF-8', () => {
  it('valid UTF-8 gives no warning; invalid lines are named', () => {
    expect(invalidUtf8Warnings('q.jsonl', Buffer.from('{"a":"é"}\n{"b":1}\n'))).toEqual([]);
    const bytes = Buffer.concat([Buffer.from('{"a":1}\n{"a":"'), Buffer.from([0xff]), Buffer.from('"}\n{"a":"'), Buffer.from([0xc3]), Buffer.from('"}\n')]);
    expect(invalidUtf8Warnings('q.jsonl', bytes)).toEqual([
      'q.jsonl: 2 line(s) are not valid UTF-8 (lines 2, 3); their invalid bytes were read as U+FFFD; save the file as UTF-8',
    ]);
  });

  it('the loader warns about a latin-1 byte in a question and still loads it', async () => {
    const dir = path.join(mkdtempSync(path.join(tmpdir(), 'rs-utf8-')), 'tiny');
    cpSync(tiny, dir, { recursive: true });
    const file = path.join(dir, 'questions.jsonl');
    const lines = readFileSync(file, 'utf8').split('\n');
    const patched = Buffer.concat([Buffer.from(lines[0].replace('How long', 'How l\u0000ng')), Buffer.from('\n'), Buffer.from(lines.slice(1).join('\n'))]);
    patched[patched.indexOf(0)] = 0xf6; // latin-1 "ö", invalid as UTF-8
    writeFileSync(file, patched);
    const ds = await loadDataset({ path: dir });
    expect(ds.warnings).toContain(`${file}: 1 line(s) are not valid UTF-8 (line 1); their invalid bytes were read as U+FFFD; save the file as UTF-8`);
    expect(ds.questions.find((q) => q.id === 'q1')!.text).toBe('How l\uFFFDng until my refund reaches my card?');
  });
});
