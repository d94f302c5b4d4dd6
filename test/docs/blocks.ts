// The code blocks of README.md, every docs/*.md page and each package's README (found, not listed, so a new
// page is covered), and
// the fragment marker: a block whose first line is `// Fragment [frame]: ...` (`# Fragment: ...` in YAML or
// shell) is not complete on its own; a TypeScript fragment type-checks inside test/docs/frames/<frame>.ts.
// docs/development.md#examples-in-the-docs says the same for the people who write the pages.
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../..');
export const FRAMES = join(ROOT, 'test/docs/frames');

export interface Block {
  /** The page, relative to the repository: `README.md`, `docs/redis.md`, `packages/guard/README.md`. */
  readonly page: string;
  /** The fence's language: `ts`, `yaml`, `sh`; '' for output and text. */
  readonly lang: string;
  readonly code: string;
  /** The line of the page where the code starts (after the fence). */
  readonly line: number;
  /** Set for a fragment: its frame's name for TypeScript (test/docs/frames/<frame>.ts), '' for other languages. */
  readonly fragment: string | undefined;
}

const FRAGMENT = /^(?:\/\/|#) Fragment(?: \[([\w-]+)\])?:/;

export function pages(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  const packages = readdirSync(join(ROOT, 'packages'))
    .sort()
    .map((p) => `packages/${p}/README.md`);
  return ['README.md', ...docs, ...packages];
}

export function blocksOf(page: string, markdown = readFileSync(join(ROOT, page), 'utf8')): Block[] {
  const out: Block[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^```([\w-]*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const start = i + 1;
    while (++i < lines.length && !/^```\s*$/.test(lines[i]!));
    const code = lines.slice(start, i).join('\n');
    const marker = FRAGMENT.exec(code);
    out.push({ page, lang: open[1]!, code, line: start + 1, fragment: marker ? (marker[1] ?? '') : undefined });
  }
  return out;
}

export function allBlocks(): Block[] {
  return pages().flatMap((p) => blocksOf(p));
}

export const isTypeScript = (b: Block) => b.lang === 'ts' || b.lang === 'typescript';

/** A block that listens on a port: run until it answers HTTP, then stopped. */
export const serves = (b: Block) => /\.listen\(|\bserve\(/.test(b.code);

/** Top-level `await` (at column 0, outside any function), which a CommonJS module cannot have. */
export const awaitsAtTopLevel = (b: Block) => b.code.split('\n').some((l) => /^(?!\s)(?!\/\/).*\bawait\b/.test(l));

/** `docs/redis.md`, line 11 -> `docs-redis-11`: a file name that says where the block is. */
export const slug = (b: Block) => `${b.page.replace(/\.md$/, '').replace(/\W+/g, '-')}-${b.line}`;
