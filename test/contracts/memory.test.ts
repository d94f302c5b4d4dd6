// The memory store against the conformance suite.
import { MemoryStore } from '../../src/index.js';
import { storeConformance } from './store-conformance.js';

storeConformance('memory', () => new MemoryStore());
