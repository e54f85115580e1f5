import type { WaitSpec } from './suspend-sql.js';

/**
 * What a suspended task's `statusMessage` says it waits for (metadata an admin reads too, so
 * names of waits and signals, never payloads): "Sleeping until 2026-12-05T10:00:00.000Z
 * (nap).", "Waiting for signal \"approve\".", "Waiting for 3 child tasks.", joined.
 */
export function waitMessage(waits: readonly WaitSpec[]): string {
  const parts: string[] = [];
  const children = waits.filter((w) => w.kind === 'child').length;
  for (const wait of waits) {
    if (wait.kind === 'time')
      parts.push(`Sleeping until ${wait.wakeAt.toISOString()} (${wait.name}).`);
    else if (wait.kind === 'signal')
      parts.push(
        `Waiting for signal ${JSON.stringify(wait.name)}${wait.wakeAt ? ` until ${wait.wakeAt.toISOString()}` : ''}.`,
      );
  }
  if (children > 0)
    parts.push(
      children === 1 ? 'Waiting for 1 child task.' : `Waiting for ${children} child tasks.`,
    );
  const text = parts.join(' ');
  return text.length > 500 ? `${text.slice(0, 497)}...` : text;
}
