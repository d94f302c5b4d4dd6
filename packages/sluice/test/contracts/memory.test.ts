// The memory store against the conformance suite.
import { MemoryStore } from '../../src/index.js';
import { storeConformance } from './store-conformance.js';
import { banConformance } from './ban-conformance.js';
import { calendarConformance } from './calendar-conformance.js';
import { memory, overrideConformance } from './override-conformance.js';

storeConformance('memory', () => new MemoryStore());

overrideConformance('memory', memory, 200);
banConformance('memory', memory, 200);
calendarConformance('memory', memory, 300);
