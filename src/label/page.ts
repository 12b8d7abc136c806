/**
 * The labelling page served by `retrieval-sweep label` (src/label/server.ts): one self-contained HTML document (inline
 * CSS and JavaScript, no external asset, no CDN), so it works offline. It carries no data: it reads the token from its
 * own address and asks the server for the state.
 *
 * Safety: every text from the pool (question, passage, ids) reaches the page through `textContent` and
 * `document.createTextNode`, never `innerHTML`, so markup in a passage is shown as text and never runs. The server
 * also sends a Content-Security-Policy that allows only this page's own script and style (by nonce).
 *
 * Keys: 0-9 grade (within the scale), s skip, u undo, n note (Enter saves, Escape cancels). The page sends one request
 * at a time and moves on only after the server's answer (the judgment is then in the log, fsynced).
 */

/** Stop words left out of highlighting (a small English list). */
const STOP = [
  'the', 'and', 'for', 'are', 'but', 'not', 'you', 'your', 'with', 'can', 'has', 'have', 'had', 'was', 'were', 'what', 'when',
  'where', 'which', 'who', 'whom', 'why', 'how', 'does', 'did', 'this', 'that', 'these', 'those', 'from', 'into', 'about',
  'any', 'all', 'our', 'out', 'there', 'their', 'they', 'them', 'then', 'than', 'its', 'will', 'would', 'should', 'could',
  'may', 'might', 'get', 'got', 'after', 'before', 'over', 'under', 'some', 'such', 'also', 'is', 'in', 'on', 'of', 'to',
  'a', 'an', 'or', 'if', 'it', 'be', 'by', 'at', 'as', 'do', 'so', 'no', 'my', 'me', 'we', 'i',
];

const SCRIPT = String.raw`
'use strict';
var token = new URLSearchParams(location.search).get('token') || '';
var STOP = new Set(__STOP__);
var state = null;
var busy = false;
function el(id) { return document.getElementById(id); }
function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
function text(node, s) { node.textContent = s; }
function fmt(n) { return Number(n).toLocaleString('en'); }
function api(method, p, body) {
  var opts = { method: method, headers: { 'x-label-token': token } };
  if (body !== undefined) { opts.headers['content-type'] = 'application/json'; opts.body = JSON.stringify(body); }
  return fetch(p + '?token=' + encodeURIComponent(token), opts).then(function (r) {
    return r.json().then(function (j) { if (!r.ok) throw new Error(j.error || ('HTTP ' + r.status)); return j; });
  });
}
function termsOf(q) {
  var out = [];
  var m = q.toLowerCase().match(/[\p{L}\p{N}]+/gu) || [];
  m.forEach(function (w) {
    if (STOP.has(w)) return;
    if (w.length < 3 && !/^\p{N}+$/u.test(w)) return;
    if (w.length > 4 && w.endsWith('s')) w = w.slice(0, -1);
    if (out.indexOf(w) < 0) out.push(w);
  });
  out.sort(function (a, b) { return b.length - a.length; });
  return out;
}
function escapeRe(s) { return s.replace(/[.*+?^$()|[\]\\{}]/g, '\\$&'); }
function highlight(node, passage, question) {
  clear(node);
  var terms = termsOf(question);
  if (terms.length === 0) { node.appendChild(document.createTextNode(passage)); return; }
  var re = new RegExp('(?<![\\p{L}\\p{N}])(?:' + terms.map(escapeRe).join('|') + ')[\\p{L}\\p{N}]*', 'giu');
  var last = 0, m;
  while ((m = re.exec(passage)) !== null) {
    if (m[0].length === 0) { re.lastIndex++; continue; }
    if (m.index > last) node.appendChild(document.createTextNode(passage.slice(last, m.index)));
    var mark = document.createElement('mark');
    mark.textContent = m[0];
    node.appendChild(mark);
    last = m.index + m[0].length;
  }
  if (last < passage.length) node.appendChild(document.createTextNode(passage.slice(last)));
}
function minutes(s) {
  if (s === null || s === undefined) return 'estimate after two grades';
  if (s < 90) return 'about ' + Math.round(s) + ' s left';
  if (s < 5400) return 'about ' + Math.round(s / 60) + ' min left';
  return 'about ' + (s / 3600).toFixed(1) + ' h left';
}
function render(s) {
  state = s;
  text(el('assessor'), s.assessor);
  text(el('progress-text'), fmt(s.graded) + ' of ' + fmt(s.total) + ' graded by ' + s.assessor + ' (' + (s.total ? Math.floor(100 * s.graded / s.total) : 100) + '%) · ' + (s.done ? 'all graded' : minutes(s.etaSeconds)));
  el('progress').max = Math.max(1, s.total);
  el('progress').value = s.graded;
  var scale = el('scale');
  clear(scale);
  el('maxkey').textContent = String(s.scale.length - 1);
  s.scale.forEach(function (label, g) {
    var b = document.createElement('button');
    b.type = 'button';
    b.className = 'grade';
    b.dataset.grade = String(g);
    b.setAttribute('aria-keyshortcuts', String(g));
    var k = document.createElement('kbd'); k.textContent = String(g); b.appendChild(k);
    b.appendChild(document.createTextNode(' ' + label));
    if (s.pair && s.currentGrade === g) b.className += ' current';
    b.addEventListener('click', function () { grade(g); });
    scale.appendChild(b);
  });
  var ag = el('agreement');
  clear(ag);
  (s.agreement || []).forEach(function (a) {
    var li = document.createElement('li');
    li.textContent = "Cohen's kappa (linear) " + a.a + ' vs ' + a.b + ': ' + (a.n ? a.weightedKappa.toFixed(3) : 'n/a') + ' over ' + a.n + ' pair(s) (unweighted ' + (isFinite(a.kappa) ? a.kappa.toFixed(3) : 'n/a') + ')';
    ag.appendChild(li);
  });
  if (!s.pair) {
    text(el('qid'), '');
    text(el('question'), s.total ? 'Every pair of the pool has a grade from ' + s.assessor + '. Merge them into the labels file, then run the sweep again.' : 'The pool is empty.');
    clear(el('passage'));
    text(el('where'), '');
    el('card').className = 'card done';
    return;
  }
  el('card').className = 'card';
  var p = s.pair;
  text(el('qid'), 'Pair ' + p.pair + ' of ' + s.total + ' · question ' + p.qid);
  text(el('question'), p.question);
  var where = 'document ' + p.doc + (p.chunk ? ' · chunk ' + p.chunk : '');
  if (p.docChars) where += ' · characters ' + fmt(p.start) + '–' + fmt(p.end) + ' of ' + fmt(p.docChars) + ' (' + Math.round(100 * p.start / Math.max(1, p.docChars)) + '%–' + Math.round(100 * p.end / Math.max(1, p.docChars)) + '%)';
  where += ' · best rank ' + p.bestRank + ' by ' + p.rows.length + ' row(s)';
  text(el('where'), where);
  el('where').title = p.rows.join('\n');
  highlight(el('passage'), p.passage, p.question);
  var notes = el('notes');
  clear(notes);
  (s.notes || []).forEach(function (n) { var li = document.createElement('li'); li.textContent = n; notes.appendChild(li); });
}
function say(msg, bad) { var m = el('message'); m.textContent = msg; m.className = bad ? 'bad' : ''; }
function act(p, body) {
  if (busy) return Promise.resolve();
  busy = true;
  document.body.setAttribute('aria-busy', 'true');
  return api('POST', p, body).then(function (s) { render(s); if (s.message) say(s.message, false); })
    .catch(function (e) { say(e.message, true); })
    .then(function () { busy = false; document.body.removeAttribute('aria-busy'); });
}
function grade(g) { if (state && state.pair) { if (g >= state.scale.length) { say('grade ' + g + ' is not on this scale (0-' + (state.scale.length - 1) + ')', true); return; } say('', false); return act('/api/grade', { pair: state.pair.pair, grade: g }); } }
function skip() { if (state && state.pair) { say('', false); return act('/api/skip', { pair: state.pair.pair }); } }
function undo() { say('', false); return act('/api/undo', {}); }
function merge() { say('merging…', false); return act('/api/merge', {}); }
function openNote() { if (!state || !state.pair) return; el('note-row').hidden = false; el('note').value = ''; el('note').focus(); }
function closeNote() { el('note-row').hidden = true; el('note').blur(); }
function saveNote() {
  var v = el('note').value.trim();
  closeNote();
  if (v && state && state.pair) return act('/api/note', { pair: state.pair.pair, note: v });
}
document.addEventListener('keydown', function (e) {
  if (e.target === el('note')) {
    if (e.key === 'Enter') { e.preventDefault(); saveNote(); }
    else if (e.key === 'Escape') { e.preventDefault(); closeNote(); }
    return;
  }
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (/^[0-9]$/.test(e.key)) { e.preventDefault(); grade(Number(e.key)); }
  else if (e.key === 's') { e.preventDefault(); skip(); }
  else if (e.key === 'u') { e.preventDefault(); undo(); }
  else if (e.key === 'n') { e.preventDefault(); openNote(); }
});
el('skip').addEventListener('click', skip);
el('undo').addEventListener('click', undo);
el('note-btn').addEventListener('click', openNote);
el('merge').addEventListener('click', merge);
api('GET', '/api/state').then(render).catch(function (e) { say(e.message, true); });
`;

const STYLE = `
:root { color-scheme: light dark; --fg: #1b1f24; --bg: #fbfbfa; --muted: #5c6570; --line: #d7dbe0; --accent: #1f5fbf; --mark: #ffe58a; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e8eb; --bg: #16181b; --muted: #9aa3ad; --line: #343a41; --accent: #7fb0ff; --mark: #6b5a12; } }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
header, main, footer { max-width: 60rem; margin: 0 auto; padding: 0.75rem 1rem; }
header { display: flex; flex-wrap: wrap; gap: 0.5rem 1rem; align-items: center; border-bottom: 1px solid var(--line); }
h1 { font-size: 1rem; margin: 0; }
progress { flex: 1 1 12rem; height: 0.75rem; }
#progress-text, #where, #qid, footer { color: var(--muted); font-size: 0.9rem; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 1rem; margin: 1rem 0; }
#question { font-size: 1.25rem; font-weight: 600; margin: 0.25rem 0 0.5rem; }
#passage { white-space: pre-wrap; max-height: 55vh; overflow: auto; border-top: 1px solid var(--line); padding-top: 0.5rem; }
mark { background: var(--mark); color: inherit; }
#scale { display: flex; flex-wrap: wrap; gap: 0.5rem; margin: 0.75rem 0; }
button { font: inherit; padding: 0.4rem 0.8rem; border: 1px solid var(--line); border-radius: 4px; background: transparent; color: inherit; cursor: pointer; }
button:focus-visible { outline: 2px solid var(--accent); outline-offset: 2px; }
button.current { border-color: var(--accent); font-weight: 600; }
kbd { font: 0.85em ui-monospace, monospace; border: 1px solid var(--line); border-radius: 3px; padding: 0 0.3em; }
.actions { display: flex; flex-wrap: wrap; gap: 0.5rem; }
#message { min-height: 1.5em; }
#message.bad { color: #c0392b; }
#note-row { margin: 0.5rem 0; }
#note { width: 100%; font: inherit; padding: 0.3rem; }
`;

const BODY = `
<header>
  <h1>retrieval-sweep · label</h1>
  <span>assessor <strong id="assessor"></strong></span>
  <progress id="progress" value="0" max="1"></progress>
  <span id="progress-text"></span>
</header>
<main>
  <section id="card" class="card" aria-live="polite">
    <div id="qid"></div>
    <div id="question"></div>
    <div id="where"></div>
    <div id="passage"></div>
    <ul id="notes"></ul>
  </section>
  <div id="scale" role="group" aria-label="grade"></div>
  <div id="note-row" hidden><input id="note" aria-label="note (Enter saves, Escape cancels)" placeholder="note (Enter saves, Escape cancels)"></div>
  <div class="actions">
    <button id="skip" type="button"><kbd>s</kbd> skip</button>
    <button id="undo" type="button"><kbd>u</kbd> undo</button>
    <button id="note-btn" type="button"><kbd>n</kbd> note</button>
    <button id="merge" type="button">merge into labels file</button>
  </div>
  <p id="message" role="status"></p>
  <ul id="agreement"></ul>
</main>
<footer>Keys: <kbd>0</kbd>–<kbd id="maxkey">3</kbd> grade · <kbd>s</kbd> skip · <kbd>u</kbd> undo · <kbd>n</kbd> note. Each judgment is written to the judgments log (fsync) before the next pair is shown.</footer>
`;

/**
 * The page's HTML with `nonce` on its one script and one style element (the server's Content-Security-Policy allows
 * only those). `nonce`: base64 characters only (the caller makes it from random bytes).
 */
export function labelPage(nonce: string): string {
  const script = SCRIPT.replace('__STOP__', JSON.stringify(STOP));
  return (
    `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<title>retrieval-sweep label</title><style nonce="${nonce}">${STYLE}</style></head>\n<body>${BODY}` +
    `<script nonce="${nonce}">${script}</script></body></html>\n`
  );
}
