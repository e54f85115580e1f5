import { execFile } from 'node:child_process';
import { appendFile, chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { eventually } from './app.js';
import { freePort } from './client-server.js';
import { recreateMigratedDatabase } from './migrated-database.js';

/**
 * A throwaway Postgres primary and its streaming standby (`pg_basebackup -R`), each a cluster
 * of its own in a temporary directory, listening on a free loopback port: what a managed
 * Postgres fails over between. The database `taskhandle` on it is migrated. Clusters run as
 * the `postgres` user when this process is root (Postgres refuses to run as root), with the
 * server binaries of `pg_config --bindir` (or PG_BINDIR).
 */
export interface ReplicatedPostgres {
  /** `postgres://…/taskhandle` on the node first started as the primary. */
  readonly primaryUrl: string;
  /** The same database on the standby: read-only until promoted. */
  readonly standbyUrl: string;
  /** `pg_ctl promote`, resolving once the standby takes writes. */
  promote(): Promise<void>;
  /** Stops the primary at once, as a crash does (`pg_ctl stop -m immediate`). */
  crashPrimary(): Promise<void>;
  /** Stops both clusters (whatever state they are in) and removes their directory. */
  stop(): Promise<void>;
}

export interface ReplicationOptions {
  /** The primary's commits wait for the standby to have the WAL (`synchronous_standby_names`). */
  synchronous: boolean;
}

const DATABASE = 'taskhandle';
/** initdb and a first start take seconds of CPU; a loaded machine may take many more. */
const COMMAND_TIMEOUT_MS = 180_000;

const run = promisify(execFile);
let bindir: Promise<string> | undefined;

/** Runs a Postgres server binary, as `postgres` when this process is root. */
async function pgCommand(binary: string, args: string[]): Promise<string> {
  bindir ??= process.env.PG_BINDIR
    ? Promise.resolve(process.env.PG_BINDIR)
    : run('pg_config', ['--bindir']).then(({ stdout }) => stdout.trim());
  const path = join(await bindir, binary);
  const [file, argv] =
    process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', path, ...args]] : [path, args];
  try {
    // Past pg_ctl's own wait (-t), which reports why.
    const { stdout } = await run(file, argv, { timeout: COMMAND_TIMEOUT_MS + 30_000 });
    return stdout;
  } catch (err) {
    const { stderr } = err as { stderr?: string };
    throw new Error(`${binary} ${args.join(' ')} failed: ${stderr ?? ''}`, { cause: err });
  }
}

/** Resolves once `check` holds on the primary: replication is in the state wanted. */
async function untilReplication(url: string, check: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await eventually(
      async () => ((await client.query(check)).rowCount ?? 0) > 0 || undefined,
      COMMAND_TIMEOUT_MS,
      50,
    );
  } finally {
    await client.end();
  }
}

export async function startReplicatedPostgres(
  options: ReplicationOptions,
): Promise<ReplicatedPostgres> {
  const dir = await mkdtemp(join(tmpdir(), 'taskhandle-failover-'));
  // The clusters' owner creates their data directories and sockets in it.
  await chmod(dir, 0o777);
  const primaryDir = join(dir, 'primary');
  const standbyDir = join(dir, 'standby');
  const started: string[] = [];
  const pgCtl = (dataDir: string, ...args: string[]) =>
    pgCommand('pg_ctl', ['-D', dataDir, '-t', String(COMMAND_TIMEOUT_MS / 1000), ...args]);
  const start = async (dataDir: string) => {
    started.push(dataDir);
    await pgCtl(dataDir, '-w', '-l', `${dataDir}.log`, 'start');
  };
  const stop = async () => {
    // Immediate: a test's clusters hold nothing worth a checkpoint.
    await Promise.all(
      started.map((dataDir) => pgCtl(dataDir, '-m', 'immediate', 'stop').catch(() => {})),
    );
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const [primaryPort, standbyPort] = await Promise.all([freePort(), freePort()]);
    await pgCommand('initdb', ['-D', primaryDir, '-U', 'postgres', '--auth=trust', '--no-sync']);
    // fsync off: every crash a test makes is a process's, and the OS keeps what was written.
    const settings = (port: number) =>
      [
        `port = ${port}`,
        `listen_addresses = '127.0.0.1'`,
        `unix_socket_directories = '${dir}'`,
        'fsync = off',
        'shared_buffers = 16MB',
        'max_connections = 100',
        '',
      ].join('\n');
    await appendFile(join(primaryDir, 'postgresql.conf'), settings(primaryPort));
    await start(primaryDir);
    const url = (port: number, database = DATABASE) =>
      `postgres://postgres@127.0.0.1:${port}/${database}`;
    const primaryUrl = await recreateMigratedDatabase(url(primaryPort, 'postgres'), DATABASE);
    await pgCommand('pg_basebackup', [
      ...['-h', '127.0.0.1', '-p', String(primaryPort), '-U', 'postgres'],
      ...['-D', standbyDir, '-R', '-X', 'stream', '--checkpoint=fast', '--no-sync'],
    ]);
    // The copy's settings are the primary's: the later line wins.
    await appendFile(join(standbyDir, 'postgresql.conf'), `port = ${standbyPort}\n`);
    await start(standbyDir);
    await untilReplication(
      primaryUrl,
      `select 1 from pg_stat_replication where state = 'streaming'`,
    );
    if (options.synchronous) {
      const admin = new pg.Client({ connectionString: primaryUrl });
      await admin.connect();
      await admin.query(`alter system set synchronous_standby_names = '*'`);
      await admin.query('select pg_reload_conf()');
      await admin.end();
      await untilReplication(
        primaryUrl,
        `select 1 from pg_stat_replication where sync_state = 'sync'`,
      );
    }
    return {
      primaryUrl,
      standbyUrl: url(standbyPort),
      promote: async () => {
        await pgCtl(standbyDir, '-w', 'promote');
      },
      crashPrimary: async () => {
        await pgCtl(primaryDir, '-m', 'immediate', 'stop');
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
