// The test builds the app inside the repository (a copy under .tmp/) with SLUICE_REPO_ROOT set, so that
// Turbopack, which compiles nothing outside its root, finds next, react and ioredis in the repository's
// node_modules, and sluice through node_modules/sluice, a link to a build of the repository, as `file:` makes one.
const root = process.env.SLUICE_REPO_ROOT;
if (root === undefined) throw new Error('SLUICE_REPO_ROOT must name the repository (test/integration/next.test.ts sets it)');
export default { turbopack: { root }, outputFileTracingRoot: root };
