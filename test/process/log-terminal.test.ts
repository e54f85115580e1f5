import { spawn } from 'node:child_process';
import { stripVTControlCharacters } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/process.js';
import { SECRET } from '../helpers/secret.js';

/** Log lines on a terminal (a pseudo-terminal from `script`), as a person starts the server. */

const quote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

/** The server on a terminal in `nodeEnv`: what it printed up to its "listening" line. */
function onTerminal(nodeEnv: string): Promise<string> {
  const command = ['node', '--import', 'tsx', 'src/main.ts'].map(quote).join(' ');
  const child = spawn('script', ['-qfec', command, '/dev/null'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      NODE_ENV: nodeEnv,
      DATA_DIR: 'memory://',
      AUTH_JWT_SECRET: SECRET,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  return new Promise<string>((resolve, reject) => {
    // Cleared once settled: the test process goes on to other files (vitest isolate: false).
    const timer = setTimeout(() => {
      process.kill(-child.pid!, 'SIGKILL');
      reject(new Error(`did not listen within 150 s: ${output}`));
    }, 150_000);
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      // A terminal ends lines with \r\n, and `.` stops at \r.
      if (/taskhandle listening[^\n]*\n/.test(output)) {
        clearTimeout(timer);
        process.kill(-child.pid!, 'SIGTERM');
        resolve(output);
      }
    });
    child.once('close', () => {
      clearTimeout(timer);
      reject(new Error(`exited before listening: ${output}`));
    });
  });
}

describe('logs on a terminal', { timeout: 180_000 }, () => {
  it('are one readable line per event in development, and JSON in production', async () => {
    const [development, production] = await Promise.all([
      onTerminal('development'),
      onTerminal('production'),
    ]);
    const plain = stripVTControlCharacters(development);
    expect(plain).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: taskhandle listening \{"url":/m);
    expect(plain).not.toContain('{"level"');
    expect(production).toMatch(/^\{"level":30,.*"msg":"taskhandle listening"\}\r?$/m);
  });
});
