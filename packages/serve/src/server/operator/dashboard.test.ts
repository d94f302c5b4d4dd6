// The dashboard page links to the login demo only when told where it runs, and never trusts the URL as HTML.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Dashboard } from './dashboard.js';
import { readSettings } from '../config/settings.js';

const noService = () => {
  throw new Error('page() must not need the service');
};

test('the dashboard links to the login demo when --demo-url is set', () => {
  assert.doesNotMatch(new Dashboard(noService).page(), /id="demo"/);
  const page = new Dashboard(noService, 1000, 'http://127.0.0.1:3000/?a=1&b=2').page();
  assert.match(page, /<a id="demo" href="http:\/\/127\.0\.0\.1:3000\/\?a=1&#38;b=2">login demo/);
});

test('--demo-url must be an http(s) URL', () => {
  assert.equal(
    readSettings(['--config', 'x.yaml', '--demo-url', 'http://127.0.0.1:3000/'], {}).demoUrl,
    'http://127.0.0.1:3000/',
  );
  assert.throws(
    () => readSettings(['--config', 'x.yaml', '--demo-url', 'javascript:alert(1)'], {}),
    /--demo-url must be an http\(s\) URL, got "javascript:alert\(1\)"/,
  );
});

test('the dashboard keeps 120 samples of every rule (issue 37, finding 4): a sample names only rules with hits, at most MAX_RULES_PER_SAMPLE, the rest as one', async () => {
  const { HISTORY, MAX_RULES_PER_SAMPLE, OTHER_RULES } = await import('./dashboard.js');
  // 10,000 rules, of which 1,000 get hits in every interval (rule i gets i hits).
  const stats = Array.from({ length: 10_000 }, (_, i) => ({ rule: `d.r${i}`, withinLimit: 0, overLimit: 0 }));
  const service = { countedStats: () => stats } as never;
  let t = 0;
  const d = new Dashboard(() => service, 1000, { now: () => (t += 1000) });
  for (let n = 0; n < HISTORY + 10; n++) {
    for (let i = 0; i < 1000; i++) stats[i]!.withinLimit += i;
    d.sample();
  }
  const samples = d.samples();
  assert.equal(samples.length, HISTORY);
  for (const s of samples) {
    const names = Object.keys(s.rules);
    assert.equal(names.length, MAX_RULES_PER_SAMPLE + 1);
    assert.deepEqual(s.rules['d.r999'], [999, 0], 'the busiest rule is named');
    assert.equal(s.rules['d.r5000'], undefined, 'an idle rule takes no room');
    // 1..999 minus the named top 50 (950..999), summed as one.
    const rest = (949 * 950) / 2;
    assert.deepEqual(s.rules[OTHER_RULES], [rest, 0]);
  }
  assert.equal(samples[0]!.t, 11_000, 'the oldest kept sample');
});

test('a counter that restarts (RuleStats.count past 2^53 - 1) charts its new value, not a negative delta', () => {
  const stats = [{ rule: 'd.r', withinLimit: 0, overLimit: 0 }];
  const d = new Dashboard(() => ({ countedStats: () => stats }) as never, 1000, { now: () => 0 });
  stats[0]!.withinLimit = 100;
  d.sample();
  stats[0]!.withinLimit = 7;
  d.sample();
  assert.deepEqual(d.samples()[1]!.rules['d.r'], [7, 0]);
});
