import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

/**
 * A CPU profile of a window the harness chooses (the fan-out's delivery, a drain), for a
 * benchmark child: `profile:start` and `profile:stop` (with `file`) over IPC, each answered
 * once done. Installs its own message handler.
 */
export function answerProfileRequests(): void {
  let inspector: Session | undefined;
  process.on('message', async (message: { type: string; file?: string }) => {
    if (message.type === 'profile:start') {
      inspector = new Session();
      inspector.connect();
      await inspector.post('Profiler.enable');
      await inspector.post('Profiler.start');
      process.send!({ type: 'profile:start' });
    }
    if (message.type === 'profile:stop' && inspector) {
      const { profile } = await inspector.post('Profiler.stop');
      inspector.disconnect();
      inspector = undefined;
      writeFileSync(message.file!, JSON.stringify(profile));
      process.send!({ type: 'profile:stop' });
    }
  });
}
