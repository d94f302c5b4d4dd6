/**
 * @file How fast this host is right now, recorded beside every benchmark's figures. This project's machines are
 * shared VMs whose speed drifts: on 2026-11-30 the loop below took 6.7 ns per step on an idle machine and
 * 10.5 ns while four builds ran, and one HMAC tag 0.60 µs on a quiet host a week before against 1.9–16 µs
 * that day. An absolute figure means little without this line; a same-run ratio is far less affected.
 */
import { createHmac } from 'node:crypto';

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/** Median of 5 timings each of a dependent integer loop (ns per step) and of one HMAC-SHA-256 tag (µs). */
export function hostSpeed() {
  const loops = [];
  const hmacs = [];
  let x = 0;
  for (let r = 0; r < 5; r++) {
    let t = process.hrtime.bigint();
    for (let i = 0; i < 5e6; i++) x = (x * 31 + i) | 0;
    loops.push(Number(process.hrtime.bigint() - t) / 5e6);
    t = process.hrtime.bigint();
    for (let i = 0; i < 5000; i++)
      x ^= createHmac('sha256', 'calibration')
        .update(`198.51.100.${i & 255}`)
        .digest()[0];
    hmacs.push(Number(process.hrtime.bigint() - t) / 5000 / 1000);
  }
  if (x === 0.5) console.log(x); // keeps the loops observable
  return { intLoopNsPerStep: +median(loops).toFixed(2), hmacSha256Us: +median(hmacs).toFixed(2) };
}

/** One line for a report's header. */
export function hostSpeedLine() {
  const s = hostSpeed();
  return `host speed at the start: integer loop ${s.intLoopNsPerStep} ns/step, HMAC-SHA-256 ${s.hmacSha256Us} µs`;
}
