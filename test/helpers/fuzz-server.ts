import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/config.js';

/**
 * The server as `npm start` builds it, in a process of its own, plus a probe on a second
 * loopback port that answers the heap in use after a full garbage collection. A test can
 * then tell memory held from garbage not yet collected. Nothing here catches errors: an
 * unhandled one ends the process, as it would in production.
 */
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const app = await createApp({ config: loadConfig() });
const url = await app.listen();
const probe = createServer((_req, res) => {
  gc();
  gc();
  const { heapUsed } = process.memoryUsage();
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ heapUsed }));
});
probe.listen(0, '127.0.0.1', () => {
  const { port } = probe.address() as AddressInfo;
  console.log(
    JSON.stringify({ msg: 'fuzz server listening', url, probe: `http://127.0.0.1:${port}` }),
  );
});
process.on('SIGTERM', () => {
  probe.close();
  void app.stop().then(() => process.exit(0));
});
