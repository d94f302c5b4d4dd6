/** Holding a shaped request for its delay in the adapters that see a Web Request (Hono, Next.js). */

/** Resolves true after `ms`, or false at once if `signal` aborts first (the client left). */
export function hold(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const gone = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', gone);
      resolve(true);
    }, ms);
    signal.addEventListener('abort', gone, { once: true });
  });
}
