// The demo's page and its script: a login form that follows the server's answer up the ladder (solve a
// proof of work with <sluice-pow>, ask for a TOTP code, show a block), and a panel listing each decision.

export function pageHtml(opts: { guardKind: string; account: string; totpSecret: string; totpUri: string }): string {
  const esc = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>sluice demo login</title><link rel="icon" href="data:,">
<style>
body{font:16px/1.45 system-ui,sans-serif;max-width:44rem;margin:2rem auto;padding:0 1rem;color:#222}
form,.panel{border:1px solid #ccc;border-radius:8px;padding:1rem;margin:1rem 0}
label{display:block;margin:.4rem 0}input{font:inherit;padding:.3rem;width:16rem}
button{font:inherit;padding:.35rem 1rem}#message{font-weight:600;min-height:1.5em}
#log{font:13px ui-monospace,monospace;max-height:16rem;overflow:auto;margin:0}
.note{font-size:.85em;color:#555}[hidden]{display:none!important}
</style></head><body>
<h1>sluice demo: a login guarded end to end</h1>
<p class="note">Guard: <b id="guard-kind">${esc(opts.guardKind)}</b>${opts.guardKind === 'stand-in' ? ' (a few counters standing in for @sluice/guard until it is merged)' : ''}.
Account <code>${esc(opts.account)}</code>, password <code>correct horse battery staple</code>.
TOTP secret for an authenticator app: <code id="totp-secret">${esc(opts.totpSecret)}</code>
(<a href="${esc(opts.totpUri)}">otpauth link</a>).</p>
<form id="login" autocomplete="off">
  <label>Username <input name="username" value="${esc(opts.account)}" required></label>
  <label>Password <input name="password" type="password" required></label>
  <label id="totp-row" hidden>Authenticator code <input name="totp" inputmode="numeric" pattern="\\d{6}" maxlength="6"></label>
  <div id="pow-row" hidden><sluice-pow id="pow"></sluice-pow></div>
  <button id="submit">Log in</button>
  <p id="message" role="status"></p>
</form>
<div class="panel"><b>Attack</b>: 30 rapid wrong-password attempts against random accounts, as credential
stuffing would send, from a simulated address (203.0.113.x, a new one per run), not from yours: your own
login stays open. <button id="attack" type="button">Run attack</button> <span id="attack-result"></span></div>
<div class="panel"><b>Guard decisions</b><pre id="log"></pre></div>
<script src="/sluice-pow.js"></script><script src="/demo.js"></script>
</body></html>`;
}

/** Runs in the browser. */
export const PAGE_SCRIPT = `'use strict';
const form = document.getElementById('login');
const message = document.getElementById('message');
const log = document.getElementById('log');
const pow = document.getElementById('pow');
const say = (text) => { message.textContent = text; };
const note = (d) => { if (d) log.textContent = new Date().toLocaleTimeString() + '  ' + d.action.padEnd(10) + (d.reasons.join(', ') || '-') + '\\n' + log.textContent; };

async function post(body) {
  const r = await fetch('/api/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return r.json();
}

async function login(extra = {}) {
  const data = Object.fromEntries(new FormData(form));
  const answer = await post({ username: data.username, password: data.password, totp: data.totp || undefined, ...extra });
  note(answer.decision);
  switch (answer.status) {
    case 'ok':
      document.getElementById('totp-row').hidden = true;
      form.elements.totp.value = '';
      return say('Signed in as ' + answer.account + '.');
    case 'denied': return say('Wrong username or password.');
    case 'blocked': return say('Too many attempts. Try again in ' + Math.ceil(answer.retryAfterMs / 1000) + ' s.');
    case 'mfa':
      document.getElementById('totp-row').hidden = false;
      form.elements.totp.focus();
      return say(answer.error ? 'That code or password did not work. Enter a fresh code.' : 'Enter the code from your authenticator app.');
    case 'challenge': {
      document.getElementById('pow-row').hidden = false;
      say('Checking your browser' + (answer.error ? ' again (' + answer.error + ')' : '') + '…');
      const solved = await pow.solve(answer.challenge.token);
      say('Checked in ' + Math.round(solved.ms) + ' ms; logging in…');
      return login({ pow: solved.solution });
    }
    default: return say('Unexpected answer: ' + JSON.stringify(answer));
  }
}

form.addEventListener('submit', (event) => {
  event.preventDefault();
  document.getElementById('submit').disabled = true;
  login().catch((e) => say('Error: ' + e.message)).finally(() => { document.getElementById('submit').disabled = false; });
});

document.getElementById('attack').addEventListener('click', async () => {
  const out = document.getElementById('attack-result');
  out.textContent = 'running…';
  const { from, answers } = await (await fetch('/api/attack', { method: 'POST' })).json();
  const counts = {};
  for (const a of answers) { counts[a.status] = (counts[a.status] || 0) + 1; note(a.decision); }
  out.textContent = 'from ' + from + ': ' + Object.entries(counts).map(([k, v]) => v + ' ' + k).join(', ');
});
`;
