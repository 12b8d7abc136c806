/**
 * The prompts of `judge` and `generate`, filling their placeholders, and the strict parsers of the answers.
 *
 * Judge (after UMBRELA: Upadhyay, Pradeep, Thakur, Craswell, Lin, "UMBRELA: UMbrela is the (Open-Source Reproduction of
 * the) Bing RELevance Assessor", arXiv:2406.06519, 2024, itself after Thomas et al., "Large language models can
 * accurately predict searcher preferences", 2023): the 0-3 scale of the labelling page, a step-by-step instruction
 * (intent, match M, trustworthiness T, overall O), and the answer's last line `##final score: N`. The wording is ours;
 * docs/judging.md prints it. Placeholders: `{question}`, `{passage}`.
 *
 * Generation: asks for questions a user would type that the passage answers, as one JSON object
 * `{"questions": ["...", ...]}`. Placeholders: `{passage}`, `{count}`, and optionally `{style}` (one sentence per
 * style, {@link GENERATION_STYLES}).
 *
 * Parsing is strict and never guesses: {@link parseFinalScore} reads the LAST line of the form `##final score: N` and
 * accepts only a whole number 0..3; {@link parseQuestionsAnswer} reads the FIRST balanced JSON object of the answer
 * and accepts only `{"questions": [non-empty strings]}`.
 */
import { readFileSync } from 'node:fs';
import { sha256Text } from '../embed/hash.js';
import { HarnessError } from '../errors.js';

/** The default judge prompt (placeholders `{question}`, `{passage}`). */
export const DEFAULT_JUDGE_PROMPT = `You are judging passages for the test collection of a search system: does the passage answer the question a user typed?

Grade the passage on a whole-number scale from 0 to 3:
0 = the passage has nothing to do with the question.
1 = the passage is on the question's topic but does not answer it.
2 = the passage answers the question in part, or the answer is unclear or buried among unrelated text.
3 = the passage is devoted to the question and holds the exact answer.

Question: {question}
Passage: {passage}

Work through it in steps. Consider what a person who types this question wants to know. Judge how well the passage meets that need (M). Judge how trustworthy the passage is (T). Weigh both and decide one final grade (O).
End your answer with one line of exactly this form, where N is 0, 1, 2 or 3:
##final score: N`;

/** The default generation prompt (placeholders `{passage}`, `{count}`, `{style}`). */
export const DEFAULT_GENERATION_PROMPT = `Here is a passage from a document collection:

<passage>
{passage}
</passage>

Write {count} different questions that a user of a search system might type and that this passage answers. Each question must make sense on its own, without the passage at hand. {style}
Answer with one JSON object and nothing else, of this form: {"questions": ["first question", "second question"]}`;

/** Style sentences of the generation prompt; the key becomes the question's tag when several styles are asked for. */
export const GENERATION_STYLES: Readonly<Record<string, string>> = {
  plain: '',
  keyword: 'Write them as short keyword queries, the way people type into a search box.',
  paraphrase: 'Use your own words: share as few words with the passage as you can.',
};

/** Placeholders a judge prompt must contain. */
export const JUDGE_PLACEHOLDERS = ['question', 'passage'] as const;
/** Placeholders a generation prompt must contain (`{style}` is optional). */
export const GENERATION_PLACEHOLDERS = ['passage', 'count'] as const;

/** A prompt template with its hash. */
export interface PromptTemplate {
  text: string;
  /** sha256 hex of `text` (part of the answer cache key). */
  sha: string;
  /** Where it came from: `default` or the file path. */
  source: string;
}

/**
 * A template from `file` (or the default when `file` is undefined), checked for every required placeholder.
 * @throws HarnessError `CONFIG_NOT_FOUND` (unreadable file), `CONFIG_INVALID` naming the file and each missing
 *   placeholder.
 */
export function loadPrompt(file: string | undefined, fallback: string, required: readonly string[]): PromptTemplate {
  if (file === undefined) return { text: fallback, sha: sha256Text(fallback), source: 'default' };
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new HarnessError('CONFIG_NOT_FOUND', `cannot read the prompt file ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'})`, {
      location: { file },
      remedy: 'pass the path of a text file holding the prompt',
      cause: e,
    });
  }
  const missing = required.filter((p) => !text.includes(`{${p}}`));
  if (missing.length > 0) {
    throw new HarnessError(
      'CONFIG_INVALID',
      `the prompt file ${file} lacks the placeholder${missing.length > 1 ? 's' : ''} ${missing.map((p) => `{${p}}`).join(', ')}`,
      {
        location: { file },
        remedy: `write ${required.map((p) => `{${p}}`).join(' and ')} where the values go (docs/judging.md shows the default prompt)`,
      },
    );
  }
  return { text, sha: sha256Text(text), source: file };
}

/**
 * `template` with each `{name}` of `values` replaced in one pass (an inserted value is never scanned again, so a
 * passage containing `{question}` stays as it is). Unknown `{...}` are left alone.
 */
export function fillPrompt(template: string, values: Readonly<Record<string, string>>): string {
  const names = Object.keys(values);
  if (names.length === 0) return template;
  const re = new RegExp(`\\{(${names.map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})\\}`, 'g');
  return template.replace(re, (_m, n: string) => values[n]);
}

/** What {@link parseFinalScore} found. */
export type ScoreParse = { ok: true; grade: number } | { ok: false; reason: 'no-score-line' | 'out-of-range' };

const SCORE_LINE = /^[ \t]*##[ \t]*final score[ \t]*:[ \t]*(.*?)[ \t]*$/i;

/**
 * The grade of a judge's answer: the LAST line of the form `##final score: N` (case and spaces around `:` free),
 * where N must be a whole number 0..3 (`2`, not `2.0`, `two` or `2/3`). Never guesses.
 * @returns `{ok: true, grade}`, or why not: `no-score-line`, `out-of-range` (the last such line holds anything else).
 */
export function parseFinalScore(answer: string): ScoreParse {
  let last: string | undefined;
  for (const line of answer.split(/\r?\n/)) {
    const m = SCORE_LINE.exec(line);
    if (m) last = m[1];
  }
  if (last === undefined) return { ok: false, reason: 'no-score-line' };
  if (!/^[0-3]$/.test(last)) return { ok: false, reason: 'out-of-range' };
  return { ok: true, grade: Number(last) };
}

/** The first balanced `{...}` of `text` (braces inside JSON strings ignored), or undefined. */
export function firstJsonObject(text: string): string | undefined {
  const start = text.indexOf('{');
  if (start < 0) return undefined;
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return text.slice(start, i + 1);
  }
  return undefined;
}

/**
 * The questions of a generation answer: the first JSON object of the answer must parse and hold `questions`, an array
 * of strings; blank strings are dropped. Undefined when the answer does not fit (never guessed).
 */
export function parseQuestionsAnswer(answer: string): string[] | undefined {
  const obj = firstJsonObject(answer);
  if (obj === undefined) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(obj);
  } catch {
    return undefined;
  }
  const qs = (v as { questions?: unknown } | null)?.questions;
  if (!Array.isArray(qs) || !qs.every((q) => typeof q === 'string')) return undefined;
  return (qs as string[]).map((q) => q.replace(/\s+/g, ' ').trim()).filter((q) => q !== '');
}
