// A Node service on the published OpenFeature SDK and providers, driven by
// stormctl's tests: one JSON query per stdin line, one JSON answer per line.
//   node client.mjs in-process|rpc|ofrep HOST PORT
import readline from 'node:readline';
import { OpenFeature, ProviderEvents } from '@openfeature/server-sdk';
import { FlagdProvider } from '@openfeature/flagd-provider';
import { OFREPProvider } from '@openfeature/ofrep-provider';

const [mode, host, port] = process.argv.slice(2);
const provider = mode === 'ofrep'
  ? new OFREPProvider({ baseUrl: `http://${host}:${port}` })
  // streamDeadlineMs 0: flagd-provider 0.16.1 otherwise ends its stream every 600 s.
  : new FlagdProvider({ resolverType: mode, host, port: Number(port), cache: 'disabled', streamDeadlineMs: 0 });

let changes = 0;
OpenFeature.addHandler(ProviderEvents.ConfigurationChanged, () => { changes++; });
let ready = true;
try {
  await OpenFeature.setProviderAndWait(provider);
} catch (e) {
  // A failed first connect (the server not up yet): the provider keeps
  // retrying in the background, so go on and let the test see what it does.
  ready = false;
  console.error(`first connect failed: ${e?.message ?? e}`);
}
const client = OpenFeature.getClient();
console.log(JSON.stringify({ ready }));

const rl = readline.createInterface({ input: process.stdin });
rl.on('line', async (line) => {
  const q = JSON.parse(line);
  let d;
  if (q.type === 'until') {
    // Evaluate every 2 ms until the number flag has the wanted value: how
    // long a lever change takes to reach this service.
    const end = Date.now() + (q.timeoutMs ?? 10000);
    do {
      d = await client.getNumberDetails(q.key, q.default, q.context);
      if (d.value === q.want) break;
      await new Promise((r) => setTimeout(r, 2));
    } while (Date.now() < end);
  } else if (q.type === 'bool') d = await client.getBooleanDetails(q.key, q.default, q.context);
  else if (q.type === 'number') d = await client.getNumberDetails(q.key, q.default, q.context);
  else d = await client.getStringDetails(q.key, q.default, q.context);
  console.log(JSON.stringify({ id: q.id, value: d.value, variant: d.variant ?? '', reason: d.reason ?? '', error: d.errorCode ?? '', changes }));
});
rl.on('close', async () => { await OpenFeature.close(); process.exit(0); });
