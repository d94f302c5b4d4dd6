/**
 * The decision ladder: allow → delay → challenge → mfa → block. Hard throttles set a floor (an action the
 * verdict cannot go below); risk points from the signals climb the ladder from there. Pure: no state.
 */
import type { GuardConfig } from './options.js';

export type GuardAction = 'allow' | 'delay' | 'challenge' | 'mfa' | 'block';

export const ACTIONS: readonly GuardAction[] = ['allow', 'delay', 'challenge', 'mfa', 'block'];

/** What `guard.check` answers. */
export interface GuardVerdict {
  readonly action: GuardAction;
  /** Hold the attempt this long before verifying the password: set for 'delay', and for 'challenge' or 'mfa' while a backoff runs. 0 for 'allow' and 'block'. */
  readonly delayMs: number;
  /** 'block': the earliest time a retry could get a lighter answer. 0 otherwise. */
  readonly retryAfterMs: number;
  /** 'challenge': a proof-of-work difficulty in leading zero bits, or 'captcha'. Undefined otherwise. */
  readonly challenge: number | 'captcha' | undefined;
  /** The risk points the signals added up to. */
  readonly risk: number;
  /** Every throttle and signal that fired, in the order checked. Empty when nothing did. */
  readonly reasons: readonly string[];
}

/** A hard throttle's demand: at least `action`, with the wait it implies. */
export interface Floor {
  action: GuardAction;
  delayMs: number;
  retryAfterMs: number;
}

export function rank(a: GuardAction): number {
  return ACTIONS.indexOf(a);
}

/** Raises `floor` to `action` with `waitMs` (a delay or a retry-after, by action); keeps the longest wait. */
export function raise(floor: Floor, action: GuardAction, waitMs: number): void {
  if (rank(action) > rank(floor.action)) floor.action = action;
  if (action === 'delay') floor.delayMs = Math.max(floor.delayMs, waitMs);
  if (action === 'block') floor.retryAfterMs = Math.max(floor.retryAfterMs, waitMs);
}

/** The action risk alone earns. */
export function riskAction(c: GuardConfig, risk: number): GuardAction {
  if (risk >= c.blockAt) return 'block';
  if (risk >= c.mfaAt) return 'mfa';
  if (risk >= c.challengeAt) return 'challenge';
  if (risk >= c.delayAt) return 'delay';
  return 'allow';
}

/**
 * Combines the floor and the risk into the verdict. `globalRisk` is the part of `risk` that says an attack
 * is under way somewhere (the global monitors), not that this attempt is one: it steps an attempt up but
 * never blocks it, since a person can pass a second factor and cannot pass a block.
 */
export function decide(
  c: GuardConfig,
  floor: Floor,
  risk: number,
  reasons: readonly string[],
  globalRisk = 0,
): GuardVerdict {
  let byRisk = riskAction(c, risk);
  if (byRisk === 'block' && risk - globalRisk < c.blockAt) byRisk = 'mfa';
  const action = rank(byRisk) > rank(floor.action) ? byRisk : floor.action;
  let delayMs = 0;
  let retryAfterMs = 0;
  let challenge: number | 'captcha' | undefined;
  // A pending backoff still holds a challenged or stepped-up attempt: solving a puzzle does not skip the wait.
  if (action !== 'block') delayMs = Math.max(floor.delayMs, byRisk === 'delay' ? c.riskDelayMs : 0);
  if (action === 'block') retryAfterMs = Math.max(floor.retryAfterMs, byRisk === 'block' ? c.blockMs : 0, 1);
  else if (action === 'challenge') {
    challenge =
      c.challenge === 'captcha'
        ? 'captcha'
        : Math.min(c.powMaxDifficulty, c.powDifficulty + c.powStep * Math.max(0, risk - c.challengeAt));
  }
  return { action, delayMs, retryAfterMs, challenge, risk, reasons };
}
