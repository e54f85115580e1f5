import { defineTaskKind } from '../tasks/kinds.js';
import { delay } from './sleep.js';

interface PipelineInput {
  stages: number;
  stageMs?: number;
  sleepMs?: number;
  signal?: string;
  signalTimeoutMs?: number;
  children?: number;
  childMs?: number;
  failAtStage?: number;
  failTimes?: number;
}

/** What one stage journals: which stage, on which attempt and when it ran. */
interface StageResult {
  stage: number;
  attempt: number;
  at: string;
}

interface PipelineResult {
  stages: StageResult[];
  signal: unknown;
  children: unknown[];
}

/**
 * The built-in durable pipeline (DESIGN §16), for demos and outside tests: steps `stage-1` …
 * `stage-n`; after the first, a durable `nap` of `sleepMs`; then a wait for `signal` (its URL
 * minted first, so the waiting step shows it); after the last stage, `children` `sleep` tasks
 * of `childMs`, started as steps and awaited together.
 */
export const pipeline = defineTaskKind<PipelineInput, PipelineResult>({
  name: 'pipeline',
  description:
    'Durable steps stage-1 … stage-n of `stageMs` each, each journalling { stage, attempt, at }; with `sleepMs`, a durable sleep after stage 1; with `signal`, a wait for that signal (URL minted first, `signalTimeoutMs` optional); with `children`, that many `sleep` children of `childMs` awaited after the last stage; `failAtStage` k throws on the first `failTimes` attempts. Result { stages, signal, children }.',
  inputSchema: {
    type: 'object',
    properties: {
      stages: { type: 'integer', minimum: 1, maximum: 100 },
      stageMs: { type: 'integer', minimum: 0, maximum: 60_000 },
      sleepMs: { type: 'integer', minimum: 0, maximum: 3_600_000 },
      signal: { type: 'string', pattern: '^[\\x20-\\x7e]{1,128}$' },
      signalTimeoutMs: { type: 'integer', minimum: 1, maximum: 86_400_000 },
      children: { type: 'integer', minimum: 0, maximum: 1_000 },
      childMs: { type: 'integer', minimum: 0, maximum: 60_000 },
      failAtStage: { type: 'integer', minimum: 1, maximum: 100 },
      failTimes: { type: 'integer', minimum: 0, maximum: 100 },
    },
    required: ['stages'],
    additionalProperties: false,
  },
  // A run's limit (waits do not count): 100 stages of a minute each, and some room.
  timeoutMs: 6_300_000,
  async run(ctx) {
    const { input } = ctx;
    const stageMs = input.stageMs ?? 0;
    const stage = (n: number) =>
      ctx.step(`stage-${n}`, async (signal): Promise<StageResult> => {
        if (stageMs > 0) await delay(stageMs, signal);
        if (n === input.failAtStage && ctx.attempt <= (input.failTimes ?? 0))
          throw new Error(`Stage ${n} failed on purpose (attempt ${ctx.attempt}).`);
        return { stage: n, attempt: ctx.attempt, at: new Date().toISOString() };
      });
    const stages: StageResult[] = [await stage(1)];
    if (input.sleepMs !== undefined) await ctx.sleep('nap', input.sleepMs);
    let signal: unknown = null;
    if (input.signal !== undefined) {
      ctx.signalUrl(input.signal);
      signal = await ctx.waitForSignal(
        input.signal,
        input.signalTimeoutMs === undefined ? {} : { timeoutMs: input.signalTimeoutMs },
      );
    }
    for (let n = 2; n <= input.stages; n++) stages.push(await stage(n));
    const count = input.children ?? 0;
    const children = await Promise.all(
      Array.from({ length: count }, (_, i) =>
        ctx.startChild(`child-${i + 1}`, 'sleep', { ms: input.childMs ?? 0, steps: 1 }),
      ),
    );
    const results = await Promise.all(children.map((child) => child.result()));
    return { stages, signal, children: results };
  },
});
