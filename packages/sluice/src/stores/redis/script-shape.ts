/**
 * What the connection layer sends of a script, apart from making one (script.ts, which hashes with
 * node:crypto): a feature that runs on runtimes without it (@sluice/pow's RedisSpentStore, imported in
 * Workers with the rest of @sluice/pow) reaches the connection without that import.
 */
export interface Script {
  readonly name: string;
  /** For EVAL; its SHA1 for EVALSHA. */
  readonly source: string;
  readonly sha: string;
}

/** A script that also loads as a Redis function library; the connection sends it by FCALL where it can. */
export interface LibraryScript extends Script {
  /**
   * The library's name and its one function's: `sluice_<SHA1 of the library's text in base 36>`, so
   * different libraries never share a name (a server keeps a library loaded under a name as it was).
   */
  readonly fn: string;
  /** For FUNCTION LOAD: the same code, with `run` registered as the function instead of called. */
  readonly library: string;
}

export function isLibrary(script: Script): script is LibraryScript {
  return (script as LibraryScript).fn !== undefined;
}
