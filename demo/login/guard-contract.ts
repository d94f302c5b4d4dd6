/**
 * The guard contract the demo is written against: the shape of `@sluice/guard`'s Guard as agreed while it
 * is built on another branch. `loadGuard()` uses the real Guard when src/guard/ is present (after the
 * merge) and otherwise the clearly labelled stand-in in stand-in-ladder.ts, so the demo runs either way.
 */
import type { Store } from 'sluice';
import { StandInLadder } from './stand-in-ladder.js';

export type GuardAction = 'allow' | 'delay' | 'challenge' | 'mfa' | 'block';

export interface GuardDecision {
  action: GuardAction;
  /** Hold the attempt this long before checking the password. */
  delayMs: number;
  /** For 'block': when a retry could get a lighter answer. */
  retryAfterMs: number;
  /** For 'challenge': a proof-of-work difficulty in leading zero bits (the guard branch's unit), or 'captcha'. */
  challenge?: number | 'captcha' | undefined;
  reasons: readonly string[];
}

export interface LoginGuard {
  check(attempt: { account: string; ip: string }): Promise<GuardDecision> | GuardDecision;
  record(outcome: {
    account: string;
    ip: string;
    success: boolean;
    password?: string;
    accountExists?: boolean;
    secondFactor?: boolean;
  }): Promise<unknown> | unknown;
}

/** Whether record() stepped a success up to MFA (the real guard's `action: 'mfa'`; the stand-in never does). */
export function stepsUp(recorded: unknown): recorded is { action: 'mfa'; reasons: readonly string[] } {
  return typeof recorded === 'object' && recorded !== null && (recorded as { action?: unknown }).action === 'mfa';
}

export interface LoadedGuard {
  guard: LoginGuard;
  /** '@sluice/guard' for the real one, 'stand-in' otherwise; the page says which. */
  kind: '@sluice/guard' | 'stand-in';
}

/**
 * The real guard's thresholds for the demo, lowered so that one visitor sees every step within a dozen
 * attempts (production keeps the defaults in the README's "Guard" section): the third failure in a row
 * brings a challenge, the sixth an MFA step-up (the hard stop, which a familiar address meets as MFA),
 * backoff waits stay under two seconds, and ten failures from one address exhaust its bucket.
 */
export const DEMO_GUARD_OPTIONS = {
  accountChallengeFailures: 3,
  hardStopFailures: 6,
  backoffMax: '2s',
  ipFailuresPerDay: 10,
} as const;

export async function loadGuard(secret: string, store?: Store): Promise<LoadedGuard> {
  // A variable specifier, so this branch typechecks before src/guard/ exists.
  const specifier = '@sluice/guard';
  try {
    const { Guard } = (await import(specifier)) as {
      Guard: new (options: { secret: string; store?: Store } & typeof DEMO_GUARD_OPTIONS) => LoginGuard;
    };
    return { guard: new Guard({ secret, ...(store ? { store } : {}), ...DEMO_GUARD_OPTIONS }), kind: '@sluice/guard' };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw error;
    return { guard: new StandInLadder(), kind: 'stand-in' };
  }
}
