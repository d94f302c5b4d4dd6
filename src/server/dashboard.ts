/**
 * The dashboard: one self-contained page (no CDN, no build step) that charts allowed against limited hits
 * per rule over time, fed by Server-Sent Events, and shows the loaded config. The server samples every
 * rule's counters once per interval and keeps the last few minutes so a new tab starts with history.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RateLimitService } from './service.js';
import { exampleCheckBody, limitInWords } from './example-request.js';

interface Sample {
  /** Epoch ms of the end of the interval. */
  readonly t: number;
  /** Length of the interval, so the page can plot hits per second. */
  readonly ms: number;
  /** rule id → [allowed hits, limited hits] in the interval. */
  readonly rules: Record<string, [number, number]>;
}

const HISTORY = 120;

export class Dashboard {
  private readonly history: Sample[] = [];
  private readonly clients = new Set<ServerResponse>();
  private last = new Map<string, [number, number]>();
  private timer: ReturnType<typeof setInterval> | undefined;

  private readonly html: string;

  constructor(
    private readonly service: () => RateLimitService,
    readonly sampleMs = 1000,
    /** The login demo's URL, linked from the header when set. */
    demoUrl?: string,
  ) {
    const link = demoUrl === undefined ? '' : `<a id="demo" href="${escapeHtml(demoUrl)}">login demo: the guard and proof of work →</a>`;
    this.html = PAGE.replace('<span id="status">connecting…</span>', `<span id="status">connecting…</span>${link}`);
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

  /** Allowed = within the limit; limited = over it (shadow-mode hits included: they would have been). */
  private sample(): void {
    const rules: Record<string, [number, number]> = {};
    const next = new Map<string, [number, number]>();
    // A detailed_metric rule reports one stats object per descriptor value: charted as the rule's sum.
    for (const s of this.service().allStats()) {
      const now = next.get(s.rule) ?? [0, 0];
      now[0] += s.withinLimit;
      now[1] += s.overLimit;
      next.set(s.rule, now);
    }
    for (const [rule, now] of next) {
      const before = this.last.get(rule) ?? [0, 0];
      rules[rule] = [Math.max(0, now[0] - before[0]), Math.max(0, now[1] - before[1])];
    }
    this.last = next;
    const sample = { t: Date.now(), ms: this.sampleMs, rules };
    this.history.push(sample);
    if (this.history.length > HISTORY) this.history.shift();
    const frame = `event: sample\ndata: ${JSON.stringify(sample)}\n\n`;
    for (const c of this.clients) c.write(frame);
  }

  subscribe(req: IncomingMessage, res: ServerResponse): void {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
    res.write(`retry: 2000\nevent: history\ndata: ${JSON.stringify(this.history)}\n\n`);
    this.clients.add(res);
    req.on('close', () => this.clients.delete(res));
  }

  configView(): { files: readonly string[]; globalShadowMode: boolean; exampleCheck: string | undefined; domains: { domain: string; file: string; source: string; rules: { id: string; limit: string; shadow: boolean }[] }[] } {
    const svc = this.service();
    return {
      files: svc.rules.config.files,
      globalShadowMode: svc.globalShadowMode,
      exampleCheck: exampleCheckBody(svc.rules.config),
      domains: [...svc.rules.config.domains.values()].map((d) => ({
        domain: d.domain,
        file: d.file,
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
  for (const [rule, [a, l]] of Object.entries(s.rules)) {
    if (!series.has(rule)) series.set(rule, []);
    const perSecond = 1000 / s.ms;
    const arr = series.get(rule); arr.push({ t: s.t, a: Math.round(a * perSecond), l: Math.round(l * perSecond) }); if (arr.length > 120) arr.shift();
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
  if (example) example.textContent = cfg.exampleCheck ? 'curl -XPOST ' + location.origin + "/v1/check -d '" + cfg.exampleCheck + "'" : 'no rule is configured';
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
