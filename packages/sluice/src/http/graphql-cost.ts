/**
 * The point cost of a GraphQL query, as GitHub computes its GraphQL rate limit: add up the requests needed
 * to fulfil each connection (a field with a `first` or `last` argument), assuming every connection returns a
 * full page, so a connection nested under others costs the product of their page sizes; divide by 100 and
 * round to the nearest whole number; at least 1.
 * Source: https://docs.github.com/en/graphql/overview/rate-limits-and-query-limits-for-the-graphql-api
 *
 * The parser covers the executable GraphQL grammar (operations, variables, fragments, inline fragments,
 * directives, every value literal, block strings, comments), so a query it rejects is not valid GraphQL.
 */
import { SluiceError } from '../core/errors.js';

type Token = { kind: 'punct' | 'name' | 'number' | 'string' | 'var'; text: string };

function lex(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  const bad = (why: string): never => {
    throw new SluiceError('ERR_SLUICE_INVALID_GRAPHQL', `GraphQL query: ${why} at offset ${i}`);
  };
  while (i < src.length) {
    const ch = src[i]!;
    if (ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r' || ch === ',' || ch === '\ufeff') i++;
    else if (ch === '#') while (i < src.length && src[i] !== '\n' && src[i] !== '\r') i++;
    else if (src.startsWith('...', i)) {
      out.push({ kind: 'punct', text: '...' });
      i += 3;
    } else if ('!$&()[]{}:=@|'.includes(ch)) {
      if (ch === '$') {
        const m = /^[_A-Za-z][_0-9A-Za-z]*/.exec(src.slice(i + 1));
        if (m === null) bad('a variable needs a name');
        out.push({ kind: 'var', text: m![0] });
        i += 1 + m![0].length;
      } else {
        out.push({ kind: 'punct', text: ch });
        i++;
      }
    } else if (/[_A-Za-z]/.test(ch)) {
      const m = /^[_A-Za-z][_0-9A-Za-z]*/.exec(src.slice(i))!;
      out.push({ kind: 'name', text: m[0] });
      i += m[0].length;
    } else if (/[-0-9]/.test(ch)) {
      const m = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(src.slice(i));
      if (m === null) bad('malformed number');
      out.push({ kind: 'number', text: m![0] });
      i += m![0].length;
    } else if (src.startsWith('"""', i)) {
      let j = i + 3;
      while (true) {
        const k = src.indexOf('"""', j);
        if (k < 0) bad('unterminated block string');
        if (src[k - 1] === '\\') j = k + 3;
        else {
          out.push({ kind: 'string', text: src.slice(i + 3, k) });
          i = k + 3;
          break;
        }
      }
    } else if (ch === '"') {
      let j = i + 1;
      let text = '';
      while (j < src.length && src[j] !== '"') {
        if (src[j] === '\n' || src[j] === '\r') bad('line break in a string');
        if (src[j] === '\\') j++;
        text += src[j] ?? '';
        j++;
      }
      if (j >= src.length) bad('unterminated string');
      out.push({ kind: 'string', text });
      i = j + 1;
    } else bad(`unexpected character ${JSON.stringify(ch)}`);
  }
  return out;
}

interface Field {
  /** Page size if the field is a connection (`first`/`last`), else undefined. */
  page: number | undefined;
  children: Selection[];
}
type Selection =
  | { kind: 'field'; field: Field }
  | { kind: 'spread'; name: string }
  | { kind: 'inline'; children: Selection[] };

/** The page size assumed when `first`/`last` is a variable with no value and no default: the maximum. */
const MAX_PAGE = 100;

class Parser {
  private p = 0;
  readonly fragments = new Map<string, Selection[]>();
  readonly operations: { name: string | undefined; selections: Selection[]; defaults: Map<string, unknown> }[] = [];

  constructor(
    private readonly t: Token[],
    private readonly variables: Record<string, unknown>,
  ) {}

  private bad(why: string): never {
    throw new SluiceError('ERR_SLUICE_INVALID_GRAPHQL', `GraphQL query: ${why} (token ${this.p})`);
  }
  private peek(text?: string): boolean {
    const tok = this.t[this.p];
    return (
      tok !== undefined && (text === undefined || (tok.text === text && (tok.kind === 'punct' || tok.kind === 'name')))
    );
  }
  private eat(text: string): void {
    if (!this.peek(text) || (this.t[this.p]!.kind !== 'punct' && this.t[this.p]!.kind !== 'name'))
      this.bad(`expected '${text}'`);
    this.p++;
  }
  private name(): string {
    const tok = this.t[this.p];
    if (tok?.kind !== 'name') this.bad('expected a name');
    this.p++;
    return tok!.text;
  }

  document(): void {
    if (this.t.length === 0) this.bad('empty document');
    while (this.p < this.t.length) {
      if (this.peek('{'))
        this.operations.push({ name: undefined, selections: this.selectionSet(new Map()), defaults: new Map() });
      else if (this.peek('fragment')) {
        this.p++;
        const name = this.name();
        this.eat('on');
        this.name();
        this.directives();
        this.fragments.set(name, this.selectionSet(new Map()));
      } else if (this.peek('query') || this.peek('mutation') || this.peek('subscription')) {
        this.p++;
        const name = this.t[this.p]?.kind === 'name' ? this.name() : undefined;
        const defaults = new Map<string, unknown>();
        if (this.peek('(')) {
          this.p++;
          while (!this.peek(')')) {
            const v = this.t[this.p];
            if (v?.kind !== 'var') this.bad('expected a variable definition');
            this.p++;
            this.eat(':');
            this.type();
            if (this.peek('=')) {
              this.p++;
              defaults.set(v!.text, this.value(defaults));
            }
            this.directives();
          }
          this.p++;
        }
        this.directives();
        this.operations.push({ name, selections: this.selectionSet(defaults), defaults });
      } else this.bad('expected an operation or a fragment');
    }
  }

  private type(): void {
    if (this.peek('[')) {
      this.p++;
      this.type();
      this.eat(']');
    } else this.name();
    if (this.peek('!')) this.p++;
  }

  private value(defaults: Map<string, unknown>): unknown {
    const tok = this.t[this.p];
    if (tok === undefined) this.bad('expected a value');
    this.p++;
    switch (tok!.kind) {
      case 'var':
        return tok!.text in this.variables ? this.variables[tok!.text] : defaults.get(tok!.text);
      case 'number':
        return Number(tok!.text);
      case 'string':
        return tok!.text;
      case 'name':
        return tok!.text === 'true' ? true : tok!.text === 'false' ? false : tok!.text === 'null' ? null : tok!.text;
      default:
        if (tok!.text === '[') {
          const list: unknown[] = [];
          while (!this.peek(']')) list.push(this.value(defaults));
          this.p++;
          return list;
        }
        if (tok!.text === '{') {
          while (!this.peek('}')) {
            this.name();
            this.eat(':');
            this.value(defaults);
          }
          this.p++;
          return {};
        }
        return this.bad(`unexpected '${tok!.text}'`);
    }
  }

  private directives(): void {
    while (this.peek('@')) {
      this.p++;
      this.name();
      if (this.peek('(')) this.arguments(new Map());
    }
  }

  private arguments(defaults: Map<string, unknown>): Map<string, unknown> {
    const args = new Map<string, unknown>();
    this.eat('(');
    while (!this.peek(')')) {
      const name = this.name();
      this.eat(':');
      args.set(name, this.value(defaults));
    }
    this.p++;
    return args;
  }

  private selectionSet(defaults: Map<string, unknown>): Selection[] {
    this.eat('{');
    const out: Selection[] = [];
    while (!this.peek('}')) {
      if (this.p >= this.t.length) this.bad("expected '}'");
      if (this.peek('...')) {
        this.p++;
        if (this.peek('on') || this.peek('@') || this.peek('{')) {
          if (this.peek('on')) {
            this.p++;
            this.name();
          }
          this.directives();
          out.push({ kind: 'inline', children: this.selectionSet(defaults) });
        } else {
          out.push({ kind: 'spread', name: this.name() });
          this.directives();
        }
        continue;
      }
      this.name();
      if (this.peek(':')) {
        this.p++;
        this.name();
      }
      const args = this.peek('(') ? this.arguments(defaults) : new Map<string, unknown>();
      this.directives();
      const children = this.peek('{') ? this.selectionSet(defaults) : [];
      let page: number | undefined;
      for (const arg of ['first', 'last']) {
        if (!args.has(arg)) continue;
        const v = args.get(arg);
        const n = typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : MAX_PAGE;
        page = Math.max(page ?? 0, n);
      }
      out.push({ kind: 'field', field: { page, children } });
    }
    this.p++;
    return out;
  }
}

/** Requests needed for the connections under `selections`, each multiplied by `parents` (the pages above). */
function requests(
  selections: Selection[],
  parents: number,
  fragments: Map<string, Selection[]>,
  seen: Set<string>,
): number {
  let sum = 0;
  for (const s of selections) {
    if (s.kind === 'inline') sum += requests(s.children, parents, fragments, seen);
    else if (s.kind === 'spread') {
      const f = fragments.get(s.name);
      if (f === undefined)
        throw new SluiceError(
          'ERR_SLUICE_INVALID_GRAPHQL',
          `GraphQL query: unknown fragment ${JSON.stringify(s.name)}`,
        );
      if (seen.has(s.name))
        throw new SluiceError(
          'ERR_SLUICE_INVALID_GRAPHQL',
          `GraphQL query: fragment ${JSON.stringify(s.name)} spreads itself`,
        );
      seen.add(s.name);
      sum += requests(f, parents, fragments, seen);
      seen.delete(s.name);
    } else if (s.field.page !== undefined) {
      sum += parents + requests(s.field.children, parents * s.field.page, fragments, seen);
    } else sum += requests(s.field.children, parents, fragments, seen);
  }
  return sum;
}

/**
 * GitHub's point cost of a GraphQL request. Throws a SluiceError (ERR_SLUICE_INVALID_GRAPHQL) if the query is
 * not valid GraphQL or `operationName` does not pick exactly one operation.
 *
 * @example graphqlCost('query { viewer { repositories(first: 100) { nodes { issues(first: 50) { totalCount } } } } }') // 1 + 100 = 101 requests: 1 point
 */
export function graphqlCost(query: string, variables: Record<string, unknown> = {}, operationName?: string): number {
  if (typeof query !== 'string')
    throw new SluiceError('ERR_SLUICE_INVALID_GRAPHQL', `GraphQL query must be a string, got ${typeof query}`);
  const parser = new Parser(lex(query), variables ?? {});
  parser.document();
  const ops =
    operationName === undefined ? parser.operations : parser.operations.filter((o) => o.name === operationName);
  if (ops.length !== 1) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_GRAPHQL',
      operationName === undefined
        ? `GraphQL query has ${ops.length} operations; give operationName`
        : `GraphQL query has no operation named ${JSON.stringify(operationName)}`,
    );
  }
  const total = requests(ops[0]!.selections, 1, parser.fragments, new Set());
  return Math.max(1, Math.round(total / 100));
}
