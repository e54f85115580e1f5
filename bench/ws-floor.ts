import { WebSocketServer } from 'ws';

/**
 * The fan-out floor: a bare `ws` server (no GraphQL, no graphql-ws, no auth) that holds the
 * sockets and, when told, sends one pre-built frame to each of them.
 */
const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: false });
const FRAME = (id: number) =>
  `{"id":"${id}","type":"next","payload":{"data":{"taskUpdated":{"id":"8137a134-af04-478e-a473-03177c5136a0","status":"CANCELLED","version":2,"progress":null}}}}`;

wss.on('listening', () =>
  process.send!({
    type: 'listening',
    url: `ws://127.0.0.1:${(wss.address() as { port: number }).port}`,
  }),
);
process.on('message', (message: { type: string }) => {
  if (message.type === 'memory') {
    const gc = (globalThis as { gc?: () => void }).gc;
    gc?.();
    gc?.();
    const { rss, heapUsed, external } = process.memoryUsage();
    process.send!({ type: 'memory', rss, heapUsed, external });
  }
  if (message.type === 'cpu') process.send!({ type: 'cpu', ...process.cpuUsage() });
  if (message.type === 'send') {
    let i = 1;
    for (const socket of wss.clients) socket.send(FRAME(i++));
    process.send!({ type: 'send' });
  }
});
process.on('SIGTERM', () => process.exit(0));
