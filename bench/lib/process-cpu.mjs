/** @file CPU time a process has used, from /proc (Linux): how the benches turn a run into CPU per request. */
import { readFileSync } from 'node:fs';

/** USER_HZ, the clock ticks /proc counts in: 100 on every Linux the benches run on. */
const TICKS_PER_SECOND = 100;

/** CPU seconds (user + system, every thread) process `pid` has used: /proc/<pid>/stat fields 14 and 15. */
export function processCpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/** processCpuSeconds of `pid` and its direct children (a shell or launcher and the server it started). */
export function treeCpuSeconds(pid) {
  const pids = [pid];
  try {
    pids.push(
      ...readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number),
    );
  } catch {}
  let total = 0;
  for (const p of pids) {
    try {
      total += processCpuSeconds(p);
    } catch {} // exited between the two reads
  }
  return total;
}
