#!/usr/bin/env node
// Validates the helpdesk dataset: `node datasets/helpdesk/check.mjs [--json]`.
//
// Errors (exit 1): a line that is not a JSON object; a missing or mistyped field; a duplicate question id; a
// relevant or evidence document that does not exist under docs/; a grade outside 0..3 (relevant) or 1..3
// (evidence); a quote that, after collapsing runs of whitespace to one space in both the quote and the document,
// does not occur exactly once (or, with `occurrence: n`, fewer than n times); a character range outside the
// document or on an .html document; evidence on a document not labelled relevant (grade >= 1); a tag outside the
// vocabulary or not 1-3 tags; `multi-doc` on a question with fewer than two relevant documents.
// Warnings (exit 0): quotes outside roughly 80-400 characters, documents outside 150-900 words, documents that no
// question labels, `paraphrase` questions that share a content word with their evidence, `occurrence` on a quote
// that occurs only once.
//
// Offsets are UTF-16 code units into the raw file text (JavaScript string indices), `[start, end)`.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(fileURLToPath(import.meta.url));
const docsDir = path.join(root, 'docs');
const TAGS = new Set(['paraphrase', 'keyword', 'part-number', 'adversarial', 'multi-doc', 'numeric']);
const errors = [];
const warnings = [];
const err = (line, msg) => errors.push(`questions.jsonl:${line}: ${msg}`);
const warn = (where, msg) => warnings.push(`${where}: ${msg}`);

/** Document id -> raw text, for every file under docs/ (id = relative path with forward slashes). */
function listDocs(dir, prefix = '') {
  const out = new Map();
  for (const name of readdirSync(dir).sort()) {
    const full = path.join(dir, name);
    const id = prefix ? `${prefix}/${name}` : name;
    if (statSync(full).isDirectory()) for (const [k, v] of listDocs(full, id)) out.set(k, v);
    else out.set(id, readFileSync(full, 'utf8'));
  }
  return out;
}
const docs = listDocs(docsDir);
const collapse = (s) => s.replace(/\s+/g, ' ');
const visible = (id, text) => (id.endsWith('.html') ? text.replace(/<(head|script|style)[\s\S]*?<\/\1>/g, ' ').replace(/<[^>]+>/g, ' ') : text);
const words = (s) => s.split(/\s+/).filter(Boolean).length;

/** Overlapping occurrences of needle in hay. */
function count(hay, needle) {
  let n = 0;
  for (let i = hay.indexOf(needle); i >= 0; i = hay.indexOf(needle, i + 1)) n++;
  return n;
}

for (const [id, text] of docs) {
  const ext = path.extname(id);
  if (!['.md', '.txt', '.html'].includes(ext)) errors.push(`docs/${id}: unexpected format ${ext}`);
  if (id.split('/').length !== 2) errors.push(`docs/${id}: documents must sit in one top-level folder`);
  const w = words(visible(id, text));
  if (w < 150 || w > 900) warn(`docs/${id}`, `${w} words, outside 150-900`);
}

const STOP = new Set(
  ('a an the and or but if of to in on at by for with from as is are was were be been it its this that these those i me my we our you your ' +
    'can could do does did how what when where which who why will would should may might must not no yes so than then there here ' +
    'have has had get got after before about into over under again still just only also all any some more most very up out off now ' +
    'am im it\'s i\'m dont don\'t won\'t want need')
    .split(' '),
);
const stem = (w) => w.toLowerCase().replace(/[^a-z0-9-]/g, '').replace(/(ing|ed|es|s)$/, '').slice(0, 6);
const contentWords = (s) => new Set(s.split(/[\s,.;:!?()"'`*>\/]+/).filter((w) => w && !STOP.has(w.toLowerCase())).map(stem).filter((w) => w.length > 2));

const lines = readFileSync(path.join(root, 'questions.jsonl'), 'utf8').split('\n');
const ids = new Set();
const labelled = new Set();
const stats = { questions: 0, tags: {}, graded: 0, listForm: 0, objectForm: 0, gradeZero: 0, evidence: 0, quotes: 0, ranges: 0, occurrences: 0 };

lines.forEach((raw, i) => {
  const line = i + 1;
  if (raw.trim() === '') {
    if (i !== lines.length - 1) err(line, 'empty line');
    return;
  }
  let q;
  try {
    q = JSON.parse(raw);
  } catch (e) {
    return err(line, `not JSON (${e.message})`);
  }
  if (typeof q !== 'object' || q === null || Array.isArray(q)) return err(line, 'not a JSON object');
  stats.questions++;
  if (typeof q.id !== 'string' || !/^q\d{2,}$/.test(q.id)) err(line, `bad id ${JSON.stringify(q.id)}`);
  else if (ids.has(q.id)) err(line, `duplicate id ${q.id}`);
  else ids.add(q.id);
  if (typeof q.question !== 'string' || q.question.trim() === '') err(line, 'question must be a non-empty string');

  // relevant: object docId -> grade 0..3, or a list of docIds (grade 1 each)
  let rel = {};
  if (Array.isArray(q.relevant)) {
    stats.listForm++;
    for (const d of q.relevant) rel[d] = 1;
    if (new Set(q.relevant).size !== q.relevant.length) err(line, 'relevant list repeats a document');
  } else if (q.relevant && typeof q.relevant === 'object') {
    stats.objectForm++;
    rel = q.relevant;
    if (Object.values(rel).some((g) => g > 1)) stats.graded++;
  } else err(line, 'relevant must be an object or a list');
  for (const [d, g] of Object.entries(rel)) {
    if (!docs.has(d)) err(line, `relevant document ${d} does not exist under docs/`);
    if (!Number.isInteger(g) || g < 0 || g > 3) err(line, `grade ${g} for ${d} is not an integer 0..3`);
    if (g === 0) stats.gradeZero++;
    if (g >= 1) labelled.add(d);
  }
  const positive = Object.keys(rel).filter((d) => rel[d] >= 1);
  if (positive.length === 0) err(line, 'no document with grade >= 1');

  // tags
  if (!Array.isArray(q.tags) || q.tags.length < 1 || q.tags.length > 3) err(line, 'tags must be a list of 1-3 tags');
  for (const t of q.tags ?? []) {
    if (!TAGS.has(t)) err(line, `unknown tag ${t}`);
    stats.tags[t] = (stats.tags[t] ?? 0) + 1;
  }
  if (new Set(q.tags).size !== (q.tags ?? []).length) err(line, 'repeated tag');
  if (q.tags?.includes('multi-doc') && positive.length < 2) err(line, 'tag multi-doc but fewer than 2 relevant documents');

  // evidence
  if (!Array.isArray(q.evidence) || q.evidence.length < 1 || q.evidence.length > 2) err(line, 'evidence must hold 1-2 passages');
  const evidenceText = [];
  for (const [j, e] of (q.evidence ?? []).entries()) {
    const where = `evidence[${j}]`;
    stats.evidence++;
    if (!docs.has(e.doc)) {
      err(line, `${where}: document ${e.doc} does not exist under docs/`);
      continue;
    }
    if (!(rel[e.doc] >= 1)) err(line, `${where}: ${e.doc} is not labelled relevant (grade >= 1)`);
    if (e.grade !== undefined && (!Number.isInteger(e.grade) || e.grade < 1 || e.grade > 3)) err(line, `${where}: grade ${e.grade} not 1..3`);
    const text = docs.get(e.doc);
    let span;
    if (typeof e.quote === 'string') {
      stats.quotes++;
      if (e.start !== undefined || e.end !== undefined) err(line, `${where}: give a quote or a range, not both`);
      if (e.doc.endsWith('.html')) err(line, `${where}: put evidence in .md/.txt documents, not ${e.doc}`);
      const n = count(collapse(text), collapse(e.quote));
      if (e.occurrence !== undefined) {
        stats.occurrences++;
        if (!Number.isInteger(e.occurrence) || e.occurrence < 1) err(line, `${where}: occurrence ${e.occurrence} must be an integer >= 1`);
        else if (n < e.occurrence) err(line, `${where}: occurrence ${e.occurrence} but the quote occurs ${n} times in ${e.doc}`);
        else if (n === 1) warn(`questions.jsonl:${line}`, `${where}: occurrence given but the quote is unique`);
      } else if (n !== 1) err(line, `${where}: quote occurs ${n} times in ${e.doc} (need exactly 1, or add "occurrence"): ${e.quote.slice(0, 60)}...`);
      span = e.quote;
    } else if (Number.isInteger(e.start) && Number.isInteger(e.end)) {
      stats.ranges++;
      if (e.doc.endsWith('.html')) err(line, `${where}: character ranges only on .md/.txt documents`);
      if (!(0 <= e.start && e.start < e.end && e.end <= text.length)) err(line, `${where}: range [${e.start}, ${e.end}) outside 0..${text.length}`);
      span = text.slice(e.start, e.end);
    } else {
      err(line, `${where}: needs a quote or integer start/end`);
      continue;
    }
    const len = collapse(span).length;
    if (len < 80 || len > 400) warn(`questions.jsonl:${line}`, `${where}: ${len} characters, outside roughly 80-400`);
    evidenceText.push(span);
  }
  if (q.tags?.includes('paraphrase') && typeof q.question === 'string') {
    const ev = contentWords(evidenceText.join(' '));
    const shared = [...contentWords(q.question)].filter((w) => ev.has(w));
    if (shared.length) warn(`questions.jsonl:${line}`, `${q.id} is tagged paraphrase but shares ${shared.join(', ')} with its evidence`);
  }
});

for (const d of docs.keys()) if (!labelled.has(d)) warn(`docs/${d}`, 'no question labels this document relevant');

const folders = {};
const formats = {};
for (const [id, text] of docs) {
  const f = id.split('/')[0];
  folders[f] = (folders[f] ?? 0) + 1;
  const x = path.extname(id).slice(1);
  formats[x] = (formats[x] ?? 0) + 1;
}
const summary = {
  documents: docs.size,
  words: [...docs].reduce((a, [id, t]) => a + words(visible(id, t)), 0),
  folders,
  formats,
  ...stats,
  errors: errors.length,
  warnings: warnings.length,
};
if (process.argv.includes('--json')) console.log(JSON.stringify(summary, null, 2));
else {
  for (const w of warnings) console.log(`warning ${w}`);
  for (const e of errors) console.log(`error ${e}`);
  console.log(JSON.stringify(summary));
}
process.exit(errors.length ? 1 : 0);
