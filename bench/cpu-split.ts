import { postgresBusyMs } from './common.js';
import type { CpuWindow } from './load.js';
import type { Child } from './processes.js';

/**
 * A load's CPU, side by side (`LoadOptions.cpu`): the server process that answers (none for
 * the driver alone), every Postgres process on this machine, and this process, the load
 * generator. On two shared cores the three together decide a closed loop's rate, so the
 * split says which side a contender's rate is paid by.
 */
export function cpuOf(server: Child | undefined): CpuWindow {
  return async () => {
    const [server0, postgres0, client0] = [await serverMs(server), postgresBusyMs(), clientMs()];
    return {
      async end() {
        const [server1, postgres1, client1] = [
          await serverMs(server),
          postgresBusyMs(),
          clientMs(),
        ];
        return {
          server: server1 - server0,
          postgres: postgres1 - postgres0,
          client: client1 - client0,
        };
      },
    };
  };
}

async function serverMs(server: Child | undefined): Promise<number> {
  if (!server) return 0;
  const { user, system } = await server.ask<{ user: number; system: number }>('cpu');
  return (user + system) / 1000;
}

function clientMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}
