// GitHub's GraphQL point cost: requests per connection, multiplied by the pages above it, / 100, rounded, at least 1.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { graphqlCost } from './graphql-cost.js';

test("GitHub's documented example costs 51 points (1 + 100 + 5000 requests)", () => {
  const q = `query {
    viewer {
      login
      repositories(first: 100) {
        edges { node { id
          issues(first: 50) { edges { node { id
            labels(first: 60) { edges { node { id name } } }
          } } }
        } }
      }
    }
  }`;
  assert.equal(graphqlCost(q), 51);
});

test('a query without connections costs the minimum of 1', () => {
  assert.equal(graphqlCost('{ viewer { login } }'), 1);
  assert.equal(graphqlCost('query { viewer { repositories(first: 10) { totalCount } } }'), 1);
});

test('variables, defaults, fragments and inline fragments are followed', () => {
  const q = `
    # a comment
    query Q($n: Int = 100, $m: Int!) {
      viewer { repositories(first: $n) { nodes { ...R } } }
    }
    fragment R on Repository { issues(last: $m) { nodes { ... on Issue { comments(first: 100) { totalCount } } } } }`;
  // 1 + 100 + 100·m
  assert.equal(graphqlCost(q, { m: 50 }), Math.round((1 + 100 + 5000) / 100));
  // A variable with no value and no default is assumed to be the maximum page, 100.
  assert.equal(graphqlCost(q, {}), Math.round((1 + 100 + 10000) / 100));
  assert.equal(graphqlCost(q, { n: 10, m: 10 }), Math.round((1 + 10 + 100) / 100) || 1);
});

test('strings, block strings, directives and object arguments parse', () => {
  const q = `query { search(query: "a \\"b\\" c", type: REPOSITORY, first: 100, filter: { x: [1, 2.5e3, true, null] }) @include(if: true) {
    nodes { ... on Repository { description(text: """multi
      line""") } }
  } }`;
  assert.equal(graphqlCost(q), 1);
});

test('operationName picks one operation; invalid GraphQL is an error with a code', () => {
  const two = 'query A { a(first: 100) { b(first: 100) { c(first: 100) { id } } } } query B { x }';
  assert.equal(graphqlCost(two, {}, 'A'), 101);
  assert.equal(graphqlCost(two, {}, 'B'), 1);
  assert.throws(() => graphqlCost(two), {
    code: 'ERR_SLUICE_INVALID_GRAPHQL',
    message: /2 operations; give operationName/,
  });
  for (const bad of [
    '',
    '{',
    'query { a(first: ) }',
    '{ a } }',
    '{ ...Missing }',
    'fragment F on X { ...F } { ...F }',
    '"unterminated',
  ]) {
    assert.throws(() => graphqlCost(bad), { code: 'ERR_SLUICE_INVALID_GRAPHQL' }, bad);
  }
});
