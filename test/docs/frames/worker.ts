// The frame of a Worker's main module (docs/runtimes.md): nothing to add; the block is complete for workerd.
