// node:test for runtimes that lack it (workerd) or run it differently (Bun, Deno): the suites bundled by
// bundle.ts register here, and run() executes them one after another and reports each.
type Body = () => unknown;
const tests: { name: string; body: Body }[] = [];

export function test(name: string, body: Body): void {
  tests.push({ name, body });
}

export interface Outcome {
  name: string;
  ok: boolean;
  ms: number;
  error?: string;
}

/** Runs every registered test whose name contains `filter` (all by default). */
export async function run(filter = ''): Promise<Outcome[]> {
  const out: Outcome[] = [];
  for (const t of tests) {
    if (!t.name.includes(filter)) continue;
    const start = Date.now();
    try {
      await t.body();
      out.push({ name: t.name, ok: true, ms: Date.now() - start });
    } catch (e) {
      out.push({
        name: t.name,
        ok: false,
        ms: Date.now() - start,
        error: e instanceof Error ? `${e.message}\n${e.stack ?? ''}` : String(e),
      });
    }
  }
  return out;
}

export default test;
