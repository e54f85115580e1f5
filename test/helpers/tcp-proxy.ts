import { EventEmitter, once } from 'node:events';
import { createServer, type Server, Socket } from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 in front of one loopback target (Postgres), for faults a polite
 * `pg_terminate_backend` does not produce:
 *
 * - `reset()`: every open connection is reset (RST, as when the server crashes or a middlebox
 *   drops the flow), mid-query or not; new connections still pass.
 * - `blackhole()`: packets are dropped. Nothing is forwarded and nothing is read, in either
 *   direction, on open connections and on new ones (which connect, as a SYN to a live host
 *   would, and then hear nothing).
 * - `deafen()`: what the client sends still reaches the server (a query runs, a commit
 *   happens) and nothing comes back, on open connections and on new ones (which then never
 *   finish connecting): an answer lost after the commit. `deafen({ openOnly: true })` deafens
 *   the connections open now only: a new one connects and is answered, so a client that
 *   needs a connection meanwhile still reaches the server.
 * - `restore()`: traffic flows again; what was held back is delivered, as TCP retransmits it.
 * - `retarget(url)`: new connections go to another server from now on, as when a DNS name or
 *   a virtual IP moves in a failover; open ones stay with the server they reached, or, with
 *   `cut`, are reset as the move happens (the old server crashed, or a proxy dropped them).
 *
 * While traffic is held the proxy notes which connections have something to send (a query
 * that will get no answer), so a test can wait for queries to be in flight instead of sleeping.
 */
export interface TcpProxy {
  /** The proxy's port on 127.0.0.1. */
  readonly port: number;
  /** `url` with its host and port pointed at the proxy. */
  via(url: string): string;
  /** Connections open right now (pairs). */
  readonly open: number;
  /** Connections accepted since the start. */
  readonly accepted: number;
  /** Connections on which the server (the proxy's client) sent bytes that are being held. */
  readonly stalled: number;
  /** Resolves once `condition()` holds, checked whenever a connection changes. */
  until(condition: () => boolean): Promise<void>;
  reset(): void;
  blackhole(): void;
  deafen(options?: { openOnly?: boolean }): void;
  restore(): void;
  /** New connections go to the Postgres server of `databaseUrl` (loopback); see above. */
  retarget(databaseUrl: string, options?: { cut?: boolean }): void;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  upstream: Socket;
  /** Bytes from the client arrived while held (they wait in the socket, unread). */
  stalled: boolean;
}

interface Target {
  host: string;
  port: number;
}

function serverOf(databaseUrl: string): Target {
  const url = new URL(databaseUrl);
  return { host: url.hostname, port: Number(url.port || 5432) };
}

function loopbackOnly(target: Target): Target {
  if (target.host !== '127.0.0.1' && target.host !== 'localhost' && target.host !== '::1')
    throw new Error(`the test proxy forwards to loopback only, not ${target.host}`);
  return target;
}

/** A proxy in front of the Postgres server of `databaseUrl`. */
export function proxyFor(databaseUrl: string): Promise<TcpProxy> {
  return startTcpProxy(serverOf(databaseUrl));
}

export async function startTcpProxy(first: Target): Promise<TcpProxy> {
  let target = loopbackOnly(first);
  const pairs = new Set<Pair>();
  let holding = false;
  let deaf = false;
  /** Whether new connections are deafened too (see `deafen`). */
  let deafNew = false;
  let accepted = 0;
  const changes = new EventEmitter();

  const hold = (pair: Pair) => {
    const { client, upstream } = pair;
    client.unpipe(upstream);
    upstream.unpipe(client);
    client.pause();
    upstream.pause();
    // 'readable' only reports that bytes wait; nothing is read (or forwarded) until restore.
    client.once('readable', () => {
      pair.stalled = true;
      changes.emit('change');
    });
  };
  const flow = (pair: Pair) => {
    const { client, upstream } = pair;
    pair.stalled = false;
    client.removeAllListeners('readable');
    client.unpipe(upstream);
    upstream.unpipe(client);
    client.pipe(upstream);
    upstream.pipe(client);
    client.resume();
    upstream.resume();
  };

  const deafen = ({ client, upstream }: Pair) => {
    upstream.unpipe(client);
    upstream.pause();
  };

  const reset = () => {
    for (const pair of [...pairs]) {
      pairs.delete(pair);
      pair.client.resetAndDestroy();
      pair.upstream.resetAndDestroy();
    }
    changes.emit('change');
  };

  const server: Server = createServer({ pauseOnConnect: true }, (client) => {
    accepted++;
    const upstream = new Socket();
    const pair: Pair = { client, upstream, stalled: false };
    pairs.add(pair);
    changes.emit('change');
    const drop = () => {
      if (!pairs.delete(pair)) return;
      client.destroy();
      upstream.destroy();
      changes.emit('change');
    };
    // A reset is what this proxy is for: either side erroring just ends the pair.
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    if (holding) hold(pair);
    upstream.connect(target.port, target.host, () => {
      if (holding) return;
      flow(pair);
      if (deaf && deafNew) deafen(pair);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no port');

  return {
    port: address.port,
    via(url) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(address.port);
      return u.toString();
    },
    get open() {
      return pairs.size;
    },
    get accepted() {
      return accepted;
    },
    get stalled() {
      let n = 0;
      for (const pair of pairs) if (pair.stalled) n++;
      return n;
    },
    async until(condition) {
      while (!condition()) await once(changes, 'change');
    },
    reset,
    blackhole() {
      holding = true;
      for (const pair of pairs) hold(pair);
    },
    deafen({ openOnly = false } = {}) {
      deaf = true;
      deafNew = !openOnly;
      for (const pair of pairs) deafen(pair);
    },
    restore() {
      holding = false;
      deaf = false;
      for (const pair of pairs) if (pair.upstream.readyState === 'open') flow(pair);
    },
    retarget(databaseUrl, { cut = false } = {}) {
      target = loopbackOnly(serverOf(databaseUrl));
      if (cut) reset();
    },
    close() {
      for (const pair of [...pairs]) {
        pairs.delete(pair);
        pair.client.destroy();
        pair.upstream.destroy();
      }
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
