/**
 * NOT @sluice/guard. A few counters with the guard's contract, so the demo runs on this branch before the
 * real Guard is merged; loadGuard() prefers the real one whenever src/guard/ exists. It keeps the ladder
 * visible and nothing more: consecutive failures per account climb allow → delay → challenge → mfa →
 * block, and a per-IP token bucket (a real sluice Limiter) blocks a burst of attempts.
 */
import { Limiter } from 'sluice';
import type { GuardDecision, LoginGuard } from './guard-contract.js';

const BLOCK_MS = 15 * 60_000;

export class StandInLadder implements LoginGuard {
  private readonly failures = new Map<string, number>();
  private readonly perIp = new Limiter({
    policy: { name: 'attempts per IP', algorithm: 'token-bucket', limit: 20, window: '1m' },
  });

  async check({ account, ip }: { account: string; ip: string }): Promise<GuardDecision> {
    const d = await this.perIp.limit(`ip:${ip}`);
    if (!d.allowed) return { action: 'block', delayMs: 0, retryAfterMs: d.retryAfterMs, reasons: ['ip-rate'] };
    const f = this.failures.get(account) ?? 0;
    const reasons = f > 0 ? [`account-failures:${f}`] : [];
    if (f >= 7) return { action: 'block', delayMs: 0, retryAfterMs: BLOCK_MS, reasons };
    if (f >= 5) return { action: 'mfa', delayMs: 0, retryAfterMs: 0, reasons };
    // Leading zero bits, as the guard branch expresses proof-of-work difficulty: 20 bits ≈ 1 M hashes.
    if (f >= 3) return { action: 'challenge', delayMs: 0, retryAfterMs: 0, challenge: 19 + (f - 3), reasons };
    if (f >= 2) return { action: 'delay', delayMs: 1000, retryAfterMs: 0, reasons };
    return { action: 'allow', delayMs: 0, retryAfterMs: 0, reasons };
  }

  record({ account, success }: { account: string; ip: string; success: boolean }): void {
    if (success) this.failures.delete(account);
    else this.failures.set(account, (this.failures.get(account) ?? 0) + 1);
  }
}
