// What a valid config does that its author may not expect: each note is logged as a warning at start and
// on every reload, and printed by `sluice check-config`, which still exits 0 (the config is valid).
import { basename } from 'node:path';
import type { ServiceConfig } from './config.js';

export interface ConfigNote {
  readonly domain: string;
  readonly message: string;
}

/**
 * A domain without `http_descriptors` gives the nginx endpoint nothing to build descriptors from, so
 * GET /nginx/<domain> answers 200 to every request: a limit that silently never applies.
 */
export function configNotes(config: ServiceConfig): ConfigNote[] {
  const notes: ConfigNote[] = [];
  for (const d of config.domains.values()) {
    if (d.httpDescriptors.length > 0) continue;
    notes.push({
      domain: d.domain,
      message:
        `${d.file
          .split(', ')
          .map((f) => basename(f))
          .join(', ')}: domain '${d.domain}' has no http_descriptors, so the nginx endpoint ` +
        `/nginx/${d.domain} passes every request; add http_descriptors (request headers to descriptor keys) if nginx calls it ` +
        `(gRPC, /json and /v1/check are not affected)`,
    });
  }
  return notes;
}
