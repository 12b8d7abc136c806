import { createHash, type Hash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fingerprintDataset } from '../../src/load/dataset.js';
import { JsonHashWriter } from '../../src/load/json-hash.js';
import type { Doc, Question } from '../../src/types.js';

/** The bytes a writer handed to its hash, collected in order. */
function written(bufferBytes: number, write: (w: JsonHashWriter) => void): Buffer {
  const parts: Buffer[] = [];
  const fake = { update: (b: Buffer) => parts.push(Buffer.from(b)) } as unknown as Hash;
  const w = new JsonHashWriter(fake, bufferBytes);
  write(w);
  w.flush();
  return Buffer.concat(parts);
}

describe('JsonHashWriter', () => {
  it('writes the escapes of ECMA-262 QuoteJSONString, worked out by hand', () => {
    const s = 'a"b\\c\nd\te\rf\bg\fh\u0001i\u001fj é 𝄞';
    const want = '"a\\"b\\\\c\\nd\\te\\rf\\bg\\fh\\u0001i\\u001fj é 𝄞"';
    expect(written(16, (w) => w.string(s)).toString('utf8')).toBe(want);
    expect(want).toBe(JSON.stringify(s));
  });

  it('writes a lone surrogate as \\udxxx, as JSON.stringify does', () => {
    expect(written(64, (w) => w.string('x\ud800y')).toString('utf8')).toBe('"x\\ud800y"');
  });

  it('equals JSON.stringify byte for byte for any strings and buffer sizes (property)', () => {
    const text = fc.oneof(fc.string({ unit: 'binary' }), fc.string({ unit: fc.constantFrom('"', '\\', '\n', '\u0000', '\u001f', 'a', 'é', '\ud83d', '\ude00') }));
    fc.assert(
      fc.property(fc.array(text, { maxLength: 8 }), fc.integer({ min: 16, max: 200 }), (strings, size) => {
        const got = written(size, (w) => {
          w.raw('[');
          strings.forEach((s, i) => {
            if (i > 0) w.raw(',');
            w.string(s);
          });
          w.raw(']\n');
        });
        expect(got.equals(Buffer.from(`${JSON.stringify(strings)}\n`, 'utf8'))).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('equals JSON.stringify on a string longer than one 64K-unit slice, with a surrogate pair across the cut', () => {
    // 65,535 code units of text with escapes, then 𝄞 (a pair) at units 65,535-65,536: the slice must end before it.
    const unit = 'a"\n\\\u0001é'; // 6 code units, 5 of them escaped or multi-byte
    const s = unit.repeat(Math.ceil(65_535 / unit.length)).slice(0, 65_535) + '𝄞' + 'tail"'.repeat(3);
    expect(s.charCodeAt(65_535)).toBe(0xd834);
    expect(written(64, (w) => w.string(s)).equals(Buffer.from(JSON.stringify(s), 'utf8'))).toBe(true);
    expect(written(1 << 20, (w) => w.string(s)).equals(Buffer.from(JSON.stringify(s), 'utf8'))).toBe(true);
    // Nothing to escape (the direct encoding): the same cut, and buffers that hold a piece or do not
    const plain = 'ab é—'.repeat(13_107) + '𝄞' + 'tail'.repeat(3);
    expect(plain.charCodeAt(65_535)).toBe(0xd834);
    for (const size of [64, 3 * 65_535 - 1, 3 * 65_535, 1 << 20])
      expect(written(size, (w) => w.string(plain)).equals(Buffer.from(JSON.stringify(plain), 'utf8'))).toBe(true);
  });

  it('fingerprintDataset is sha256 over docs\\n, one ["id","text"] line per document by id, questions\\n, one line per question', () => {
    const docs: Doc[] = [
      { id: 'z', text: 'Title\n\n"quoted" \\ body' },
      { id: 'a', text: 'plain' },
    ];
    const q: Question = { id: 'q1', text: 'why?', relevant: { z: 2, a: 0 }, evidence: [], tags: [], line: 1 };
    const h = createHash('sha256');
    h.update('docs\n["a","plain"]\n["z","Title\\n\\n\\"quoted\\" \\\\ body"]\nquestions\n');
    h.update('["q1","why?",[["a",0],["z",2]],[],null]\n');
    expect(fingerprintDataset(docs, [q])).toBe(h.digest('hex'));
  });
});
