// `npm run demo`: builds nothing itself (the npm script builds the widget first) and serves the demo.
import { startDemo } from './app.js';

const port = Number(process.env.PORT ?? 3000);
const demo = await startDemo({ port });
console.log(`sluice login demo on ${demo.url}  (guard: ${demo.guardKind}; Ctrl-C to stop)`);
