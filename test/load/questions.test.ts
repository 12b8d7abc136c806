import { describe, expect, it } from 'vitest';
import { isHarnessError, type HarnessError } from '../../src/errors.js';
import { normaliseDocId, parseQuestions, type LabelPolicy } from '../../src/load/questions.js';
import type { Doc } from '../../src/types.js';
import { thrown } from '../helpers/errors.js';

const FILE = 'questions.jsonl';

function corpus(docs: Record<string, string>): Map<string, Doc> {
  return new Map(Object.entries(docs).map(([id, text]) => [id, { id, text }]));
}

const DOCS = corpus({
  'guide.md': '# Guide\n\nPress the   red\nbutton.\n',
  'faq.md': 'Contact support. Or read the manual. Contact\n  support.',
  'warranty.md': 'The warranty lasts two years.',
  'pump.md': 'Use a 5 A fuse.',
  'router.md': 'Hold reset for 10 seconds.',
  'sub/deep.md': 'Deep text.',
});

function lines(...objs: unknown[]): string {
  return objs.map((o) => (typeof o === 'string' ? o : JSON.stringify(o))).join('\n') + '\n';
}

function parse(text: string, labels?: LabelPolicy) {
  return parseQuestions(text, FILE, DOCS, labels === undefined ? {} : { labels });
}


describe('parseQuestions: shape', () => {
  it('reads relevant as object (grades) and as array (grade 1 each), tags, chunks, 1-based lines; blank lines skipped', () => {
    const { questions, warnings } = parse(
      lines(
        { id: 'q1', question: 'How?', relevant: { 'guide.md': 2, 'faq.md': 0 }, tags: ['paraphrase'] },
        '',
        { id: 'q2', question: 'Why?', relevant: ['pump.md', 'router.md'], chunks: { 'pump.md#0': 1 } },
      ),
    );
    expect(warnings).toEqual([]);
    expect(questions).toEqual([
      { id: 'q1', text: 'How?', relevant: { 'guide.md': 2, 'faq.md': 0 }, evidence: [], tags: ['paraphrase'], line: 1 },
      { id: 'q2', text: 'Why?', relevant: { 'pump.md': 1, 'router.md': 1 }, evidence: [], chunkLabels: { 'pump.md#0': 1 }, tags: [], line: 3 },
    ]);
  });

  it('numeric ids become strings; CRLF line ends and a BOM are accepted', () => {
    const text = '\ufeff' + JSON.stringify({ id: 7, question: 'x?', relevant: ['pump.md'] }) + '\r\n';
    const { questions } = parse(text);
    expect(questions[0].id).toBe('7');
    expect(questions[0].text).toBe('x?');
  });

  it('question line key relevent is an error suggesting relevant', () => {
    const e = thrown(() => parse(lines({ id: 'q0', question: 'ok' }, { id: 'q1', question: 'a', relevent: ['pump.md'] })));
    expect(e.code).toBe('QUESTIONS_INVALID');
    expect(e.location).toEqual({ file: FILE, line: 2, path: 'relevent' });
    expect(e.message).toBe('question q1: unknown key "relevent" (did you mean "relevant"?); known keys: id, question, tags, relevant, evidence, chunks');
    expect(e.remedy).toContain('strictness: warn');
  });

  it('an unknown key inside an evidence entry is an error naming its path and the nearest evidence key', () => {
    const e = thrown(() => parse(lines({ id: 'q1', question: 'a', evidence: [{ doc: 'pump.md', qoute: '5 A' }] })));
    expect(e.code).toBe('QUESTIONS_INVALID');
    expect(e.location.path).toBe('evidence[0].qoute');
    expect(e.message).toContain('did you mean "quote"?');
    expect(e.message).toContain('known keys: doc, grade, quote, occurrence, start, end');
  });

  it('strictness: warn keeps the question and warns (one warning per key listing the lines)', () => {
    const { questions, warnings } = parseQuestions(
      lines({ id: 'q1', question: 'a', relevent: ['pump.md'] }, { id: 'q2', question: 'b', relevent: ['pump.md'], relevant: ['pump.md'] }),
      FILE,
      DOCS,
      { strictness: 'warn' },
    );
    expect(questions.map((q) => q.relevant)).toEqual([{}, { 'pump.md': 1 }]);
    expect(warnings).toEqual([`${FILE}: unknown key "relevent" (did you mean "relevant"?) ignored on lines 1, 2`]);
  });

  it('label ids are normalised like document ids (backslashes, leading ./)', () => {
    expect(normaliseDocId('.\\sub\\deep.md')).toBe('sub/deep.md');
    expect(normaliseDocId('././guide.md')).toBe('guide.md');
    const { questions } = parse(lines({ id: 'q1', question: 'a', relevant: { 'sub\\deep.md': 1, './guide.md': 2 } }));
    expect(questions[0].relevant).toEqual({ 'sub/deep.md': 1, 'guide.md': 2 });
  });

  it('M10: a question with an empty label list is kept without error', () => {
    const { questions, warnings } = parse(lines({ id: 'q3', question: 'unlabelled?', relevant: [] }, { id: 'q4', question: 'no keys?' }));
    expect(questions.map((q) => [q.id, q.relevant])).toEqual([['q3', {}], ['q4', {}]]);
    expect(warnings).toEqual([]);
  });
});

describe('parseQuestions: errors name file, line and key', () => {
  it('malformed JSON line -> QUESTIONS_INVALID at file:line with the start of the line', () => {
    const e = thrown(() => parse(lines({ id: 'q1', question: 'a' }, '{"id": "q2", "question": oops}')));
    expect(e.code).toBe('QUESTIONS_INVALID');
    expect(e.location).toEqual({ file: FILE, line: 2 });
    expect(e.message).toContain('{"id": "q2"');
  });

  it('a line that is JSON but not an object -> QUESTIONS_INVALID', () => {
    const e = thrown(() => parse(lines('["q1", "a"]')));
    expect(e.code).toBe('QUESTIONS_INVALID');
    expect(e.location.line).toBe(1);
  });

  it.each([
    ['missing id', { question: 'a' }, 'id'],
    ['empty id', { id: '  ', question: 'a' }, 'id'],
    ['missing question', { id: 'q1' }, 'question'],
    ['empty question', { id: 'q1', question: '' }, 'question'],
  ])('%s -> QUESTIONS_INVALID naming the key', (_name, obj, key) => {
    const e = thrown(() => parse(lines({ id: 'q0', question: 'ok' }, obj)));
    expect(e.code).toBe('QUESTIONS_INVALID');
    expect(e.location).toEqual({ file: FILE, line: 2, path: key });
  });

  it('grade not an integer >= 0 -> LABEL_INVALID naming file:line, doc and value', () => {
    for (const bad of [-1, 1.5, '2', null]) {
      const e = thrown(() => parse(lines({ id: 'q1', question: 'a', relevant: { 'guide.md': bad } })));
      expect(e.code).toBe('LABEL_INVALID');
      expect(e.location.file).toBe(FILE);
      expect(e.location.line).toBe(1);
      expect(e.message).toContain('guide.md');
      expect(e.message).toContain(JSON.stringify(bad));
    }
  });

  it('an empty label id is an error, so missing ids can never match anything', () => {
    const e = thrown(() => parse(lines({ id: 'q1', question: 'a', relevant: ['guide.md', ''] })));
    expect(e.code).toBe('LABEL_INVALID');
    expect(e.location.path).toBe('relevant[1]');
  });

  it('chunk label that is not <docId>#<ordinal> -> LABEL_INVALID', () => {
    const e = thrown(() => parse(lines({ id: 'q1', question: 'a', chunks: { 'guide.md': 1 } })));
    expect(e.code).toBe('LABEL_INVALID');
  });
});

describe('parseQuestions: duplicate ids (field case V01)', () => {
  const warranty = { id: 'q7', question: 'How long is the warranty?', relevant: ['warranty.md'] };
  const pump = { id: 'q7', question: 'Which fuse fits the pump?', relevant: ['pump.md'] };
  const router = { id: 'q8', question: 'How do I reset the router?', relevant: ['router.md'] };

  it('V01 case_conflict: different text -> QUESTIONS_INVALID naming q7, "2 entries" and both lines', () => {
    const e = thrown(() => parse(lines(warranty, pump, router)));
    expect(e.code).toBe('QUESTIONS_INVALID');
    expect(e.message).toContain('q7');
    expect(e.message).toContain('2 entries');
    expect(e.message).toContain('lines 1 and 2');
  });

  it('same text but different labels is also a conflict', () => {
    const e = thrown(() => parse(lines(warranty, { ...warranty, relevant: { 'warranty.md': 2 } })));
    expect(e.code).toBe('QUESTIONS_INVALID');
  });

  it('V01 case_exact_copy: collapses with the warning "duplicate question q7 collapsed"; 2 questions remain', () => {
    const { questions, warnings } = parse(lines(warranty, warranty, router));
    expect(questions.map((q) => q.id)).toEqual(['q7', 'q8']);
    expect(questions[0].line).toBe(1);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('duplicate question q7 collapsed');
  });

  it('exact copies with the label object keys in another order are still copies', () => {
    const a = { id: 'q1', question: 'a', relevant: { 'guide.md': 1, 'faq.md': 2 } };
    const b = { id: 'q1', question: 'a', relevant: { 'faq.md': 2, 'guide.md': 1 } };
    expect(parse(lines(a, b)).questions).toHaveLength(1);
  });
});

describe('parseQuestions: labels naming documents not in the corpus (field case V02)', () => {
  const q1 = { id: 'q1', question: 'setup?', relevant: ['guide.md', 'setup.md'] };
  const q2 = { id: 'q2', question: 'other?', relevant: { 'gone.md': 2 }, chunks: { 'lost.md#3': 1 } };

  it('strict (default): one LABEL_INVALID listing every dangling label', () => {
    const e = thrown(() => parse(lines(q1, q2)));
    expect(e.code).toBe('LABEL_INVALID');
    expect(e.message).toContain('q1 -> setup.md not found in corpus');
    expect(e.message).toContain('q2 -> gone.md not found in corpus');
    expect(e.message).toContain('q2 -> lost.md not found in corpus');
    expect(e.location).toEqual({ file: FILE, line: 1 });
  });

  it('keep: the label stays (unretrievable, trec_eval style) with a warning per label', () => {
    const { questions, warnings } = parse(lines(q1, q2), 'keep');
    expect(questions[0].relevant).toEqual({ 'guide.md': 1, 'setup.md': 1 });
    expect(questions[1].relevant).toEqual({ 'gone.md': 2 });
    expect(questions[1].chunkLabels).toEqual({ 'lost.md#3': 1 });
    expect(warnings).toHaveLength(3);
    expect(warnings[0]).toContain('q1 -> setup.md not found in corpus');
    expect(warnings[0]).toContain('kept');
  });

  it('drop: the label is removed with a warning per label; the question stays', () => {
    const { questions, warnings } = parse(lines(q1, q2), 'drop');
    expect(questions[0].relevant).toEqual({ 'guide.md': 1 });
    expect(questions[1].relevant).toEqual({});
    expect(questions[1].chunkLabels).toEqual({});
    expect(warnings).toHaveLength(3);
    expect(warnings[0]).toContain('q1 -> setup.md not found in corpus');
    expect(warnings[0]).toContain('dropped');
  });

  it('evidence naming a missing document is dangling too', () => {
    const q = { id: 'q1', question: 'a', evidence: [{ doc: 'missing.md', quote: 'x', grade: 2 }] };
    expect(thrown(() => parse(lines(q))).code).toBe('LABEL_INVALID');
    const kept = parse(lines(q), 'keep').questions[0];
    expect(kept.relevant).toEqual({ 'missing.md': 2 });
    expect(kept.evidence).toEqual([]);
    expect(parse(lines(q), 'drop').questions[0].relevant).toEqual({});
  });
});

describe('parseQuestions: repeated labels', () => {
  it('the same document twice in one list counts once at the highest grade, with a warning', () => {
    const { questions, warnings } = parse(lines({ id: 'q1', question: 'a', relevant: { 'guide.md': 1, './guide.md': 3 } }));
    expect(questions[0].relevant).toEqual({ 'guide.md': 3 });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('guide.md');
  });

  it('array form with a repeat counts once', () => {
    const { questions, warnings } = parse(lines({ id: 'q1', question: 'a', relevant: ['pump.md', 'pump.md'] }));
    expect(questions[0].relevant).toEqual({ 'pump.md': 1 });
    expect(warnings).toHaveLength(1);
  });
});

describe('parseQuestions: evidence', () => {
  const guide = DOCS.get('guide.md')!.text;
  const faq = DOCS.get('faq.md')!.text;

  it('a quote with different whitespace is located and mapped to the RAW range', () => {
    const { questions } = parse(lines({ id: 'q1', question: 'a', evidence: [{ doc: 'guide.md', quote: 'Press the red button.' }] }));
    const start = guide.indexOf('Press');
    const end = guide.indexOf('button.') + 'button.'.length;
    expect(questions[0].evidence).toEqual([{ doc: 'guide.md', start, end, grade: 1, quote: 'Press the red button.' }]);
  });

  it('document relevance is derived from evidence at the max grade of its spans', () => {
    const { questions } = parse(
      lines({
        id: 'q1',
        question: 'a',
        relevant: { 'pump.md': 1 },
        evidence: [
          { doc: 'guide.md', quote: 'Press the', grade: 1 },
          { doc: 'guide.md', quote: 'red button', grade: 3 },
        ],
      }),
    );
    expect(questions[0].relevant).toEqual({ 'pump.md': 1, 'guide.md': 3 });
  });

  it('a relevant grade wins over evidence grades for the same document (with a warning when lower)', () => {
    const { questions, warnings } = parse(
      lines({ id: 'q1', question: 'a', relevant: { 'guide.md': 0 }, evidence: [{ doc: 'guide.md', quote: 'red button' }] }),
    );
    expect(questions[0].relevant).toEqual({ 'guide.md': 0 });
    expect(warnings).toHaveLength(1);
  });

  it('a passage occurring twice maps to the occurrence the label names', () => {
    const q = (occurrence: number) => ({ id: 'q1', question: 'a', evidence: [{ doc: 'faq.md', quote: 'Contact support.', occurrence }] });
    const first = parse(lines(q(1))).questions[0].evidence[0];
    const second = parse(lines(q(2))).questions[0].evidence[0];
    expect([first.start, first.end]).toEqual([0, 'Contact support.'.length]);
    const at = faq.lastIndexOf('Contact');
    expect([second.start, second.end]).toEqual([at, faq.length]);
  });

  it('a passage occurring twice without occurrence -> LABEL_INVALID saying how many times and the remedy', () => {
    const e = thrown(() => parse(lines({ id: 'q1', question: 'a', evidence: [{ doc: 'faq.md', quote: 'Contact support.' }] })));
    expect(e.code).toBe('LABEL_INVALID');
    expect(e.message).toContain('2 times');
    expect(e.remedy).toContain('"occurrence"');
    expect(e.remedy).toContain('start');
  });

  it('quote absent -> LABEL_INVALID naming question id, document and first words', () => {
    const quote = 'Turn the blue dial clockwise until it clicks twice and then wait';
    const e = thrown(() => parse(lines({ id: 'q42', question: 'a', evidence: [{ doc: 'guide.md', quote }] })));
    expect(e.code).toBe('LABEL_INVALID');
    expect(e.location).toEqual({ file: FILE, line: 1, path: 'evidence[0].quote' });
    expect(e.message).toContain('q42');
    expect(e.message).toContain('guide.md');
    expect(e.message).toContain('Turn the blue dial clockwise until it clicks');
    expect(e.message).not.toContain('then wait');
  });

  it('range form: start/end kept as given when 0 <= start < end <= length', () => {
    const { questions } = parse(lines({ id: 'q1', question: 'a', evidence: [{ doc: 'pump.md', start: 0, end: 15, grade: 2 }] }));
    expect(questions[0].evidence).toEqual([{ doc: 'pump.md', start: 0, end: 15, grade: 2 }]);
    expect(questions[0].relevant).toEqual({ 'pump.md': 2 });
  });

  it.each([
    [0, 16],
    [-1, 3],
    [5, 5],
    [6, 2],
    [0.5, 3],
  ])('range form [%s, %s) outside "Use a 5 A fuse." (length 15) -> LABEL_INVALID', (start, end) => {
    const e = thrown(() => parse(lines({ id: 'q1', question: 'a', evidence: [{ doc: 'pump.md', start, end }] })));
    expect(e.code).toBe('LABEL_INVALID');
  });

  it('evidence grade 0 is invalid (evidence grades are >= 1)', () => {
    const e = thrown(() => parse(lines({ id: 'q1', question: 'a', evidence: [{ doc: 'pump.md', start: 0, end: 3, grade: 0 }] })));
    expect(e.code).toBe('LABEL_INVALID');
  });

  it('quote and start/end together -> LABEL_INVALID', () => {
    const e = thrown(() => parse(lines({ id: 'q1', question: 'a', evidence: [{ doc: 'pump.md', quote: 'fuse', start: 0, end: 3 }] })));
    expect(e.code).toBe('LABEL_INVALID');
  });

  it('occurrence beyond the count -> LABEL_INVALID', () => {
    const e = thrown(() => parse(lines({ id: 'q1', question: 'a', evidence: [{ doc: 'faq.md', quote: 'Contact support.', occurrence: 3 }] })));
    expect(e.code).toBe('LABEL_INVALID');
    expect(e.message).toContain('2 times');
  });
});

describe('newcomer mistakes (issue 22)', () => {
  it('a label naming a missing document suggests the id meant: a docs/ prefix (also with backslashes), case, file name, a typo', () => {
    const e = thrown(() =>
      parse(lines({ id: 'q1', question: 'x?', relevant: ['docs\\guide.md', 'docs/sub/deep.md', 'FAQ.md', 'other/pump.md', 'warrenty.md', 'zzzzzzzzzz.md'] })),
    );
    expect(isHarnessError(e, 'LABEL_INVALID')).toBe(true);
    const m = (e as HarnessError).message;
    expect(m).toContain('q1 -> docs/guide.md not found in corpus (line 1; did you mean guide.md? document ids are paths relative to the docs folder, without docs/)');
    expect(m).toContain('q1 -> docs/sub/deep.md not found in corpus (line 1; did you mean sub/deep.md? document ids are paths relative');
    expect(m).toContain('q1 -> FAQ.md not found in corpus (line 1; did you mean faq.md? document ids are case-sensitive)');
    expect(m).toContain('q1 -> other/pump.md not found in corpus (line 1; did you mean pump.md? the one document with that file name)');
    // "warrenty.md" → "warranty.md" is one substitution.
    expect(m).toContain('q1 -> warrenty.md not found in corpus (line 1; did you mean warranty.md? the nearest document id (1 edit))');
    expect(m).toContain('q1 -> zzzzzzzzzz.md not found in corpus (line 1)');
  });

  it('labels: keep and drop warn with the same suggestion', () => {
    const { warnings } = parse(lines({ id: 'q1', question: 'x?', relevant: ['guide.md', 'docs/pump.md'] }), 'drop');
    expect(warnings).toEqual([`${FILE}:1: q1 -> docs/pump.md not found in corpus; did you mean pump.md? document ids are paths relative to the docs folder, without docs/; label dropped (labels: drop)`]);
  });

  it('a JSON trailing comma is named as such, with its column (1-based)', () => {
    const line = '{"id": "q1", "question": "a, b?", "relevant": ["guide.md",]}';
    const e = thrown(() => parse(`${line}\n`));
    expect(isHarnessError(e, 'QUESTIONS_INVALID')).toBe(true);
    const col = line.indexOf(',]') + 1; // the comma before "]", not the one inside "a, b?"
    expect((e as HarnessError).message).toContain(`line 1 is not valid JSON: a trailing comma at column ${col}, after the last item of a list (before "]")`);
    expect((e as HarnessError).location).toEqual({ file: FILE, line: 1, column: col });
    expect((e as HarnessError).format().startsWith(`${FILE}:1:${col}: `)).toBe(true);
    const obj = '{"id": "q1", "question": "x", "relevant": ["guide.md"], }';
    expect((thrown(() => parse(`${obj}\n`)) as HarnessError).message).toContain(`a trailing comma at column ${obj.indexOf(', }') + 1}, after the last key of an object`);
  });

  it('"query" (BEIR\'s key) instead of "question" gets a did-you-mean; so does "qid" for "id"', () => {
    const e = thrown(() => parse(lines({ id: 'q1', query: 'How?', relevant: ['guide.md'] }))) as HarnessError;
    expect(e.code).toBe('QUESTIONS_INVALID');
    expect(e.message).toBe('question q1: key "question" is missing; the line has "query" (did you mean "question"?)');
    const f = thrown(() => parse(lines({ qid: 'q1', question: 'How?', relevant: ['guide.md'] }))) as HarnessError;
    expect(f.message).toContain('unknown key "qid" (did you mean "id"?)');
  });
});
