// The guard conformance suite on the memory store and the memory guard state.
import { MemoryGuardState } from '../../src/index.js';
import { MemoryStore } from '../../../sluice/src/index.js';
import { RecordingStore } from '../support/guard-kit.js';
import { guardConformance } from './guard-conformance.js';

guardConformance('memory', {
  makeStore: () => new RecordingStore(),
  makeState: () => new MemoryGuardState(),
  dump: async (store, state) => [...(store as RecordingStore).keys].join('\n') + (state as MemoryGuardState).dump(),
});

guardConformance('memory (plain MemoryStore)', {
  makeStore: () => new MemoryStore(),
  makeState: () => new MemoryGuardState(),
});
