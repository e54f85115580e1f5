import type { TaskKind } from '../tasks/kinds.js';
import { approval } from './approval.js';
import { exportTasks } from './export.js';
import { pipeline } from './pipeline.js';
import { primes } from './primes.js';
import { sleep } from './sleep.js';

/** The kinds every server has (DESIGN §5). */
export const builtInKinds: readonly TaskKind<any, any>[] = [
  sleep,
  approval,
  primes,
  exportTasks,
  pipeline,
];
