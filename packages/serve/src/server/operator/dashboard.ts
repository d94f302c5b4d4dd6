/**
 * The dashboard: one self-contained page (no CDN, no build step) that charts allowed against limited hits
 * per rule over time, fed by Server-Sent Events, and shows the loaded config. The server samples every
 * rule's counters once per interval and keeps the last few minutes so a new tab starts with history.
 *
 * What it holds is bounded whatever the rule count: a sample names only the rules that had hits in its
 * interval, at most MAX_RULES_PER_SAMPLE of them (the busiest; the rest are summed as OTHER_RULES), so the
 * history is at most HISTORY × (MAX_RULES_PER_SAMPLE + 1) points, and so is what a new stream is sent.
 * Streams are capped (`maxStreams`), each lasts at most `streamMs` (the page's EventSource reconnects by
 * itself), and one whose client stops reading is dropped once MAX_BACKLOG_BYTES wait unsent.
 */
import { statSync } from 'node:fs';
import { basename, dirname, isAbsolute, relative, resolve } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RateLimitService } from '../service.js';
import { exampleCheckBody, limitInWords } from './example-request.js';

interface Sample {
  /** Epoch ms of the end of the interval. */
  readonly t: number;
  /** Length of the interval, so the page can plot hits per second. */
  readonly ms: number;
  /** rule id → [allowed hits, limited hits] in the interval, for the rules that had any. */
  readonly rules: Record<string, [number, number]>;
}

/** A rule's allowed (a) and limited (l) hits now and at the sample before, and the interval's difference. */
interface Tally {
  readonly rule: string;
  round: number;
  a: number;
  l: number;
  beforeA: number;
  beforeL: number;
  dA: number;
  dL: number;
}

/** Samples kept: two minutes at the default interval. */
export const HISTORY = 120;
/** Rules a sample names at most; the other rules with hits are summed under OTHER_RULES. */
export const MAX_RULES_PER_SAMPLE = 50;
/** The chart of the rules beyond MAX_RULES_PER_SAMPLE in a sample. */
export const OTHER_RULES = '(other rules)';
/** Unsent bytes after which a stream's client is taken as gone (it stopped reading) and the stream is cut. */
const MAX_BACKLOG_BYTES = 1 << 20;

export interface DashboardOptions {
  /** The login demo's URL, linked from the header when set. */
  readonly demoUrl?: string | undefined;
  /** --config: /config names each file relative to it, never by its absolute path. */
  readonly configRoot?: string;
  /** Open /events streams held at most; one more is answered 503. Default 64. */
  readonly maxStreams?: number;
  /** A stream is ended after this long; the page reconnects. Default 300,000. */
  readonly streamMs?: number;
  /** Epoch ms for the samples' time stamps; tests inject it. */
  readonly now?: () => number;
  /** The decision port, once it listens: the page's example request goes there, not to the admin port. */
  readonly decisionPort?: () => number | undefined;
}

export class Dashboard {
  private readonly history: Sample[] = [];
  private readonly clients = new Set<ServerResponse>();
  /** Per rule, its counters at the last two samples: one small object per rule, reused every sample. */
  private readonly tallies = new Map<string, Tally>();
  private round = 0;
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly html: string;
  private readonly maxStreams: number;
  private readonly streamMs: number;
  private readonly now: () => number;
  private readonly showFile: (file: string) => string;
  private readonly decisionPort: () => number | undefined;

  constructor(
    private readonly service: () => RateLimitService,
    readonly sampleMs = 1000,
    options: DashboardOptions | string = {},
  ) {
    const o: DashboardOptions = typeof options === 'string' ? { demoUrl: options } : options;
    const link =
      o.demoUrl === undefined
        ? ''
        : `<a id="demo" href="${escapeHtml(o.demoUrl)}">login demo: the guard and proof of work →</a>`;
    this.html = PAGE.replace('<span id="status">connecting…</span>', `<span id="status">connecting…</span>${link}`);
    this.maxStreams = o.maxStreams ?? 64;
    this.streamMs = o.streamMs ?? 300_000;
    this.now = o.now ?? Date.now;
    this.showFile = shownAs(o.configRoot);
    this.decisionPort = o.decisionPort ?? (() => undefined);
  }

  start(): void {
    this.timer ??= setInterval(() => this.sample(), this.sampleMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    for (const c of this.clients) c.end();
    this.clients.clear();
  }

  /** Open /events streams. */
  get streams(): number {
    return this.clients.size;
  }

  /** The samples kept, oldest first. */
  samples(): readonly Sample[] {
    return this.history;
  }

  /**
   * Takes one sample (the timer calls it every `sampleMs`). Allowed = within the limit; limited = over it
   * (shadow-mode hits included: they would have been).
   */
  sample(): void {
    const round = ++this.round;
    // A detailed_metric rule reports one stats object per descriptor value: charted as the rule's sum.
    for (const s of this.service().countedStats()) {
      // A rule that never decided has nothing to chart, and no tally: at 50,000 rules, most of them. (One
      // whose tally goes stale this way had zero counts, so a new tally later counts it right.)
      if (s.withinLimit === 0 && s.overLimit === 0) continue;
      let t = this.tallies.get(s.rule);
      if (t === undefined)
        this.tallies.set(s.rule, (t = { rule: s.rule, round: 0, a: 0, l: 0, beforeA: 0, beforeL: 0, dA: 0, dL: 0 }));
      if (t.round !== round) {
        t.round = round;
        t.beforeA = t.a;
        t.beforeL = t.l;
        t.a = t.l = 0;
      }
      t.a += s.withinLimit;
      t.l += s.overLimit;
    }
    // The busiest MAX_RULES_PER_SAMPLE, kept sorted as they come (few enter once it is full), the rest summed.
    const top: Tally[] = [];
    let otherA = 0;
    let otherL = 0;
    for (const [rule, t] of this.tallies) {
      if (t.round !== round) {
        this.tallies.delete(rule); // a rule a reload removed
        continue;
      }
      // A counter that went down was restarted (see RuleStats.count): its whole value is this interval's.
      t.dA = t.a < t.beforeA ? t.a : t.a - t.beforeA;
      t.dL = t.l < t.beforeL ? t.l : t.l - t.beforeL;
      const hits = t.dA + t.dL;
      if (hits === 0) continue;
      if (top.length === MAX_RULES_PER_SAMPLE) {
        const last = top[MAX_RULES_PER_SAMPLE - 1]!;
        if (hits <= last.dA + last.dL) {
          otherA += t.dA;
          otherL += t.dL;
          continue;
        }
        top.pop();
        otherA += last.dA;
        otherL += last.dL;
      }
      let i = top.length;
      while (i > 0 && top[i - 1]!.dA + top[i - 1]!.dL < hits) i--;
      top.splice(i, 0, t);
    }
    const rules: Record<string, [number, number]> = {};
    for (const t of top) rules[t.rule] = [t.dA, t.dL];
    if (otherA > 0 || otherL > 0) rules[OTHER_RULES] = [otherA, otherL];
    const sample = { t: this.now(), ms: this.sampleMs, rules };
    this.history.push(sample);
    if (this.history.length > HISTORY) this.history.shift();
    const frame = `event: sample\ndata: ${JSON.stringify(sample)}\n\n`;
    for (const c of this.clients) {
      // A client that stopped reading: its frames pile up in memory; it is dropped, not fed.
      if (c.writableLength > MAX_BACKLOG_BYTES) c.destroy();
      else c.write(frame);
    }
  }

  subscribe(_req: IncomingMessage, res: ServerResponse): void {
    if (this.clients.size >= this.maxStreams) {
      const body = JSON.stringify({
        error: `the dashboard already has ${this.maxStreams} open /events streams (--admin-max-event-streams); close one, or retry later`,
      });
      res.writeHead(503, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        'retry-after': '10',
      });
      return void res.end(body);
    }
    // connection: close, so that the end of the stream frees its socket too (a stream is never followed by
    // another request on its connection: EventSource reconnects afresh).
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'close' });
    res.write(`retry: 2000\nevent: history\ndata: ${JSON.stringify(this.history)}\n\n`);
    this.clients.add(res);
    // Every stream ends in time; the page's EventSource reconnects (after `retry`) and gets the history anew.
    const lifetime = setTimeout(() => res.end(), this.streamMs);
    lifetime.unref();
    res.once('close', () => {
      clearTimeout(lifetime);
      this.clients.delete(res);
    });
  }

  /** The loaded rules and each file's text; files are named relative to --config, and no setting is shown. */
  configView(): {
    files: readonly string[];
    globalShadowMode: boolean;
    exampleCheck: string | undefined;
    decisionPort: number | undefined;
    domains: {
      domain: string;
      file: string;
      source: string;
      rules: { id: string; limit: string; shadow: boolean }[];
    }[];
  } {
    const svc = this.service();
    return {
      files: svc.rules.config.files.map(this.showFile),
      globalShadowMode: svc.globalShadowMode,
      exampleCheck: exampleCheckBody(svc.rules.config),
      decisionPort: this.decisionPort(),
      domains: [...svc.rules.config.domains.values()].map((d) => ({
        domain: d.domain,
        file: this.showFile(d.file),
        source: d.source,
        rules: d.rules.map((r) => ({
          id: r.id,
          limit: limitInWords(r),
          shadow: r.shadowMode,
        })),
      })),
    };
  }

  page(): string {
    return this.html;
  }
}

/**
 * How /config names a file: relative to --config's folder (or the folder --config names), and by its
 * base name when it lies outside it. An absolute path tells a visitor the host's layout.
 */
function shownAs(configRoot: string | undefined): (file: string) => string {
  if (configRoot === undefined) return (file) => basename(file);
  let dir = resolve(configRoot);
  try {
    if (!statSync(dir).isDirectory()) dir = dirname(dir);
  } catch {
    dir = dirname(dir);
  }
  return (file) => {
    const rel = relative(dir, resolve(file));
    return rel === '' || rel.startsWith('..') || isAbsolute(rel) ? basename(file) : rel;
  };
}

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>sluice</title><link rel="icon" href="data:,">
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
 body{font:14px/1.4 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
 header{background:#1d2330;color:#fff;padding:10px 20px;display:flex;gap:16px;align-items:baseline}
 header h1{font-size:18px;margin:0} #status{opacity:.8} #demo{margin-left:auto;color:#9fd3ff}
 main{padding:16px 20px;display:grid;grid-template-columns:minmax(0,2fr) minmax(0,1fr);gap:16px}
 .card{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:10px 12px;margin-bottom:12px}
 .card h2{font-size:13px;margin:0 0 6px;font-family:ui-monospace,monospace;word-break:break-all}
 .legend span{display:inline-block;margin-right:12px;font-size:12px}
 .sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px;vertical-align:-1px}
 canvas{width:100%;height:120px;display:block}
 pre{font:12px/1.35 ui-monospace,monospace;white-space:pre-wrap;margin:0}
 .empty{color:#777}
</style></head>
<body>
<header><h1>sluice</h1><span id="status">connecting…</span></header>
<main>
 <section><div class="legend"><span><i class="sw" style="background:#2e9d5b"></i>allowed hits/s</span><span><i class="sw" style="background:#d9433a"></i>limited hits/s</span></div>
  <div id="charts" data-samples="0" data-allowed="0" data-limited="0"><p class="empty">No decisions yet. Send some: <code id="example">curl -XPOST &lt;this address&gt;/v1/check</code></p></div></section>
 <aside><div class="card"><h2>loaded config</h2><div id="rules"></div></div><div id="config"></div></aside>
</main>
<script>
const series = new Map(); // rule -> [{t, a, l}]
let samples = 0, totalA = 0, totalL = 0;
const charts = document.getElementById('charts');
function add(s) {
  samples++;
  // A sample names only the rules that had hits: every other chart gets a zero for it.
  for (const rule of Object.keys(s.rules)) if (!series.has(rule)) series.set(rule, []);
  const perSecond = 1000 / s.ms;
  for (const [rule, arr] of series) {
    const [a, l] = s.rules[rule] || [0, 0];
    arr.push({ t: s.t, a: Math.round(a * perSecond), l: Math.round(l * perSecond) }); if (arr.length > 120) arr.shift();
    totalA += a; totalL += l;
  }
}
function card(rule) {
  let c = document.getElementById('c-' + rule);
  if (c) return c;
  const div = document.createElement('div'); div.className = 'card';
  const h = document.createElement('h2'); h.textContent = rule; div.appendChild(h);
  c = document.createElement('canvas'); c.id = 'c-' + rule; c.dataset.rule = rule; div.appendChild(c);
  const p = document.createElement('div'); p.className = 'legend'; p.id = 't-' + rule; div.appendChild(p);
  charts.querySelector('.empty')?.remove(); charts.appendChild(div);
  return c;
}
function draw() {
  charts.dataset.samples = samples; charts.dataset.allowed = totalA; charts.dataset.limited = totalL;
  for (const [rule, pts] of series) {
    if (!pts.some((p) => p.a || p.l) && !document.getElementById('c-' + rule)) continue;
    const c = card(rule), dpr = window.devicePixelRatio || 1;
    c.width = c.clientWidth * dpr; c.height = c.clientHeight * dpr;
    const g = c.getContext('2d'); g.scale(dpr, dpr);
    const w = c.clientWidth, h = c.clientHeight, n = 120;
    const max = Math.max(1, ...pts.map((p) => Math.max(p.a, p.l)));
    g.strokeStyle = '#eceff3'; g.lineWidth = 1;
    for (let i = 0; i <= 4; i++) { const y = 4 + (h - 20) * i / 4; g.beginPath(); g.moveTo(0, y); g.lineTo(w, y); g.stroke(); }
    g.fillStyle = '#777'; g.font = '11px system-ui'; g.fillText(max + '/s', 4, 14);
    for (const [k, color] of [['a', '#2e9d5b'], ['l', '#d9433a']]) {
      g.strokeStyle = color; g.lineWidth = 2; g.beginPath();
      pts.forEach((p, i) => { const x = w - (pts.length - 1 - i) * (w / (n - 1)); const y = 4 + (h - 20) * (1 - p[k] / max); i ? g.lineTo(x, y) : g.moveTo(x, y); });
      g.stroke();
    }
    const last = pts[pts.length - 1] || { a: 0, l: 0 };
    document.getElementById('t-' + rule).textContent = 'now: ' + last.a + ' allowed/s, ' + last.l + ' limited/s';
  }
}
fetch('/config').then((r) => r.json()).then((cfg) => {
  const example = document.getElementById('example');
  const decisions = cfg.decisionPort ? location.protocol + '//' + location.hostname + ':' + cfg.decisionPort : location.origin;
  if (example) example.textContent = cfg.exampleCheck ? 'curl -XPOST ' + decisions + "/v1/check -d '" + cfg.exampleCheck + "'" : 'no rule is configured';
  const rules = document.getElementById('rules'), conf = document.getElementById('config');
  if (cfg.globalShadowMode) { const b = document.createElement('p'); b.id = 'global-shadow'; b.textContent = 'global shadow mode (--shadow-mode): every answer is OK; "limited" is what the rules would have refused'; rules.appendChild(b); }
  for (const d of cfg.domains) {
    for (const r of d.rules) { const p = document.createElement('div'); p.innerHTML = '<code></code>'; p.firstChild.textContent = r.id + ': ' + r.limit + (r.shadow ? ' (shadow)' : ''); rules.appendChild(p); }
    const c = document.createElement('div'); c.className = 'card';
    const h = document.createElement('h2'); h.textContent = d.file; const pre = document.createElement('pre'); pre.textContent = d.source;
    c.append(h, pre); conf.appendChild(c);
  }
});
const es = new EventSource('/events');
const status = document.getElementById('status');
es.addEventListener('history', (e) => { for (const s of JSON.parse(e.data)) add(s); draw(); status.textContent = 'live'; });
es.addEventListener('sample', (e) => { add(JSON.parse(e.data)); draw(); status.textContent = 'live · ' + new Date().toLocaleTimeString(); });
es.onerror = () => { status.textContent = 'reconnecting…'; };
</script>
</body></html>
`;

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
