// A NestJS application as `nest new` makes one: CommonJS, decorators compiled by TypeScript with
// experimentalDecorators and emitDecoratorMetadata, on @nestjs/platform-express; it requires sluice/nestjs
// from the packed tarball, with @nestjs/throttler on SluiceThrottlerStorage beside it. test/package/pack.test.ts
// calls nestConsumerTests() with the tarball it packed.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { before, test } from 'node:test';

const root = resolve(import.meta.dirname, '../..');
const run = (cmd: string, args: string[], cwd: string) =>
  execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

/**
 * The application of docs/nestjs.md, its first TypeScript block as a user pastes it, with its bootstrap
 * swapped for one that listens on a free port, sends five requests and prints what came back.
 */
function app(): string {
  const doc = readFileSync(join(root, 'docs/nestjs.md'), 'utf8');
  const block = /^```ts\n([\s\S]*?)^```$/m.exec(doc)![1]!;
  const at = block.indexOf('async function bootstrap()');
  assert.ok(at > 0, 'docs/nestjs.md: the first block has no bootstrap()');
  return block.slice(0, at) + main;
}

const main = `async function main(): Promise<void> {
  const app = await NestFactory.create(AppModule, { logger: false });
  await app.listen(0, '127.0.0.1');
  const url = await app.getUrl();
  const seen: unknown[] = [];
  for (const [method, path] of [['GET', '/'], ['POST', '/login'], ['POST', '/login'], ['GET', '/health'], ['GET', '/info']] as const) {
    const r = await fetch(url.replace('[::1]', '127.0.0.1') + path, { method });
    seen.push([r.status, r.headers.get('ratelimit'), r.headers.get('content-type')?.split(';')[0], await r.text()]);
  }
  console.log(JSON.stringify(seen));
  await app.close();
}
void main();
`;

/** The versions this repository tests with, from its own package.json. */
function devVersion(name: string): string {
  const { devDependencies } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    devDependencies: Record<string, string>;
  };
  return `${name}@${devDependencies[name]}`;
}

export function nestConsumerTests(work: string, tarball: () => readonly string[]): void {
  const project = join(work, 'nest-app');
  before(() => {
    mkdirSync(project, { recursive: true });
    run('npm', ['init', '-y'], project); // "type": "commonjs", as a Nest CLI project
    const nest = [
      '@nestjs/common',
      '@nestjs/core',
      '@nestjs/platform-express',
      '@nestjs/throttler',
      'reflect-metadata',
      'rxjs',
    ].map(devVersion);
    run(
      'npm',
      ['install', '--no-audit', '--no-fund', '--prefer-offline', '--omit=optional', ...tarball(), ...nest],
      project,
    );
    writeFileSync(join(project, 'app.ts'), app());
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          target: 'ES2022',
          strict: true,
          experimentalDecorators: true,
          emitDecoratorMetadata: true,
          outDir: 'out',
          types: ['node'],
          typeRoots: [join(root, 'node_modules/@types')],
          skipLibCheck: true,
        },
        files: ['app.ts'],
      }),
    );
  });

  test('a CommonJS NestJS app compiled with decorators requires sluice/nestjs: module, per-route rule, skip, the decision, problem+json', () => {
    run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', project], project);
    assert.match(readFileSync(join(project, 'out/app.js'), 'utf8'), /require\("sluice\/nestjs"\)/);
    const seen = JSON.parse(run(process.execPath, [join(project, 'out/app.js')], project)) as [
      number,
      string | null,
      string | undefined,
      string,
    ][];
    assert.deepEqual(
      seen.map(([status, ratelimit, type]) => [status, ratelimit, type]),
      [
        [200, 'limit=3, remaining=2, reset=20', 'text/html'],
        [201, 'limit=1, remaining=0, reset=60', 'text/html'],
        [429, 'limit=1, remaining=0, reset=60', 'application/problem+json'],
        [200, null, 'text/html'],
        [200, 'limit=3, remaining=1, reset=40', 'application/json'],
      ],
    );
    assert.equal((JSON.parse(seen[2]![3]) as { status: number }).status, 429);
    assert.deepEqual(JSON.parse(seen[4]![3]), { route: null, remaining: 1 });
  });
}
