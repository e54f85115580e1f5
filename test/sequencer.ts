import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take longest (tens of seconds each on two shared cores: a package built and
 * installed, servers started as users start them, processes killed and waited for).
 */
const LONGEST = [
  'test/process/package.test.ts',
  'test/process/start-stop.test.ts',
  'test/db/failover.test.ts',
  'test/tasks/runner/durable-process.test.ts',
  'test/db/faults.test.ts',
  'test/cli/cli.test.ts',
  'test/fuzz/hostile.test.ts',
  'test/dashboard/dashboard.test.ts',
];

/**
 * vitest's order (failed first, then longest first by the durations of the last run), except
 * that a file it has no duration for goes by LONGEST first: on a fresh clone it would go by
 * size, and a long file started last runs on alone while the other workers sit idle.
 */
export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const known = (file: TestSpecification) =>
      this.ctx.cache.getFileTestResults(
        `${file.project.name}:${relative(this.ctx.config.root, file.moduleId)}`,
      ) !== undefined;
    const rank = (file: TestSpecification) =>
      known(file) ? -1 : LONGEST.indexOf(relative(this.ctx.config.root, file.moduleId));
    const first = sorted.filter((f) => rank(f) >= 0).sort((a, b) => rank(a) - rank(b));
    return [...first, ...sorted.filter((f) => rank(f) < 0)];
  }
}
