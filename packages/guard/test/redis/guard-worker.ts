// A worker process for guard-processes.test.ts: its own Guard on a shared Redis; on each message it
// records the given failed logins and replies with what its own check() then says.
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { Guard } from '../../src/index.js';
import { RedisStore } from '../../../sluice/src/stores/redis/index.js';

const [url, prefix] = process.argv.slice(2) as [string, string];
const client = new Redis(url);
await once(client, 'ready');
const guard = new Guard({
  secret: 'multi-process-secret-0123456789',
  store: new RedisStore({ client, prefix, timeoutMs: 5000, onError: 'closed' }),
});

process.on('message', async (m: { fail: { account: string; ip: string }[] } | 'exit') => {
  if (m === 'exit') {
    client.disconnect();
    process.exit(0);
  }
  for (const f of m.fail) await guard.record({ account: f.account, ip: f.ip, success: false });
  process.send!({ seen: await guard.check({ account: 'someone-new', ip: m.fail[0]!.ip }) });
});
process.send!('ready');
