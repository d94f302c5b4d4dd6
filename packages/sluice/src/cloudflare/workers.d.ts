/**
 * The little of the Workers runtime's own module that sluice/cloudflare uses, for compiling sluice only. A
 * Worker project has the full declarations (@cloudflare/workers-types, or `wrangler types`).
 */
declare module 'cloudflare:workers' {
  export abstract class DurableObject<Env = unknown> {
    protected ctx: unknown;
    protected env: Env;
    constructor(ctx: unknown, env: Env);
  }
}
