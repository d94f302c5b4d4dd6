/**
 * <sluice-pow>: a framework-free web component that fetches a challenge, solves it in Web Workers with a
 * progress bar, and fills a hidden form field. Drop it inside a form:
 *
 *   <form method="post" action="/login">
 *     <input name="username"> <input name="password" type="password">
 *     <sluice-pow challenge-url="/pow/challenge" params="username"></sluice-pow>
 *     <button>Log in</button>
 *   </form>
 *   <script src="/sluice-pow.js"></script>
 *
 * Attributes: `challenge` (a token rendered by the server: solving starts at once) or `challenge-url`
 * (GET, with the form fields named in `params` as query parameters, answering a createChallenge() JSON:
 * solving starts on submit); `name` of the hidden field (default "sluice-pow"); `worker-url` to load the
 * worker from a file instead of a blob: URL (for a CSP without `worker-src blob:`); `workers`.
 * Events: sluice-pow-progress, sluice-pow-solved, sluice-pow-error (detail carries the data).
 */
import { solveInBrowser, type BrowserSolveResult, type Progress } from './solver.js';

declare const __SLUICE_POW_WORKER__: string;

let blobUrl: string | undefined;
function defaultWorkerUrl(): string {
  blobUrl ??= URL.createObjectURL(new Blob([__SLUICE_POW_WORKER__], { type: 'text/javascript' }));
  return blobUrl;
}

const STYLE = `:host{display:block;font:inherit}progress{width:100%;height:.6em}
.status{font-size:.85em;opacity:.8}:host([hidden]){display:none}`;

export class SluicePowElement extends HTMLElement {
  /** The solution once solved; the hidden field holds the same. */
  solution: string | undefined;
  private field: HTMLInputElement | undefined;
  private controller: AbortController | undefined;
  private pending: Promise<BrowserSolveResult> | undefined;
  private readonly bar: HTMLProgressElement;
  private readonly status: HTMLSpanElement;
  private readonly onSubmit = (event: SubmitEvent) => this.interceptSubmit(event);

  constructor() {
    super();
    const root = this.attachShadow({ mode: 'open' });
    root.innerHTML = `<style>${STYLE}</style><progress max="1" value="0" part="progress"></progress><span class="status" part="status" role="status" aria-live="polite"></span>`;
    this.bar = root.querySelector('progress')!;
    this.status = root.querySelector('.status')!;
  }

  connectedCallback(): void {
    const form = this.closest('form');
    this.field = document.createElement('input');
    this.field.type = 'hidden';
    this.field.name = this.getAttribute('name') ?? 'sluice-pow';
    this.insertAdjacentElement('afterend', this.field);
    form?.addEventListener('submit', this.onSubmit);
    this.setStatus(0, 'Ready');
    const token = this.getAttribute('challenge');
    if (token) void this.solve(token).catch(() => undefined);
  }

  disconnectedCallback(): void {
    this.cancel();
    this.closest('form')?.removeEventListener('submit', this.onSubmit);
    this.field?.remove();
  }

  /** Stops a running solve. */
  cancel(): void {
    this.controller?.abort(new Error('cancelled'));
  }

  /** Solves `token` (or fetches a challenge first) and fills the hidden field. */
  solve(token?: string): Promise<BrowserSolveResult> {
    this.cancel();
    const controller = new AbortController();
    this.controller = controller;
    this.solution = undefined;
    if (this.field) this.field.value = '';
    const run = async () => {
      const challenge = token ?? (await this.fetchChallenge(controller.signal));
      this.setStatus(0, 'Checking your browser…');
      const workerUrl = this.getAttribute('worker-url');
      const workers = Number(this.getAttribute('workers')) || undefined;
      const result = await solveInBrowser(challenge, {
        workers,
        signal: controller.signal,
        createWorker: () => new Worker(workerUrl ?? defaultWorkerUrl()),
        onProgress: (p: Progress) => {
          this.setStatus(Math.min(0.99, p.hashes / p.expected), `Checking your browser… ${p.solved}/${p.total}`);
          this.dispatchEvent(new CustomEvent('sluice-pow-progress', { detail: p }));
        },
      });
      this.solution = result.solution;
      if (this.field) this.field.value = result.solution;
      this.setStatus(1, 'Done');
      this.dispatchEvent(new CustomEvent('sluice-pow-solved', { detail: result, bubbles: true }));
      return result;
    };
    const pending = run().catch((error: unknown) => {
      if (!controller.signal.aborted) {
        this.setStatus(0, 'Could not check your browser; please retry');
        this.dispatchEvent(new CustomEvent('sluice-pow-error', { detail: error, bubbles: true }));
      }
      throw error;
    });
    this.pending = pending;
    return pending;
  }

  private async fetchChallenge(signal: AbortSignal): Promise<string> {
    const url = new URL(this.getAttribute('challenge-url') ?? '', location.href);
    const form = this.closest('form');
    for (const name of (this.getAttribute('params') ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)) {
      const field = form?.elements.namedItem(name);
      if (field && 'value' in field) url.searchParams.set(name, String(field.value));
    }
    const response = await fetch(url, { signal, credentials: 'same-origin', headers: { accept: 'application/json' } });
    if (!response.ok) throw new Error(`challenge request failed: HTTP ${response.status}`);
    const body = (await response.json()) as { token?: unknown };
    if (typeof body.token !== 'string') throw new Error('challenge response has no token');
    return body.token;
  }

  /** Holds the submit until a solution is in the hidden field, then submits again with the same button. */
  private interceptSubmit(event: SubmitEvent): void {
    if (this.hasAttribute('disabled')) return;
    if (this.solution !== undefined) {
      // This submit carries the solution. It is spent once used, so the next submit (a page that stays,
      // say after a failed login) solves a fresh challenge. The form data is already built by then.
      setTimeout(() => {
        this.solution = undefined;
        if (this.field) this.field.value = '';
        this.pending = undefined;
      });
      return;
    }
    if (!this.getAttribute('challenge-url') && !this.pending) return;
    event.preventDefault();
    const form = event.target as HTMLFormElement;
    const submitter = event.submitter;
    const waiting =
      this.pending && !this.controller?.signal.aborted && this.getAttribute('challenge') ? this.pending : this.solve();
    waiting.then(
      () => form.requestSubmit(submitter && form.contains(submitter) ? (submitter as HTMLElement) : undefined),
      () => undefined,
    );
  }

  private setStatus(fraction: number, text: string): void {
    this.bar.value = fraction;
    this.status.textContent = text;
  }
}

if (!customElements.get('sluice-pow')) customElements.define('sluice-pow', SluicePowElement);
export { solveInBrowser };
