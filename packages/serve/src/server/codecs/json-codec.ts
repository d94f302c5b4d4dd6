/**
 * The HTTP APIs' bodies: decoding (json-fast.ts for the common /json bodies, json-decode.ts for the rest
 * and for /v1/check) and rendering (json-render.ts). One import for the server and for the benchmarks
 * that load a build's codec by this path.
 */
export { checkJsonDepth, decodeCheck, decodeRlsJson } from './json-decode.js';
export { decodeRlsJsonFast } from './json-fast.js';
export { renderCheck, renderRlsJson, renderRlsJsonSized } from './json-render.js';
export type { RenderedJson } from './json-render.js';
