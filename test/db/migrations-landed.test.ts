import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/**
 * Migrations are forward-only and never edited once landed (DESIGN §8): a database that ran
 * a file keeps what that file said then, so an edit reaches only fresh databases. Each landed
 * file's sha256 is recorded here; a change to the schema is a new numbered file, whose hash
 * is added to this table when it lands.
 */
const LANDED: Readonly<Record<string, string>> = {
  '0001_tasks.sql': '528774899195cf580b50ddda6f4670a696efbd9eee68265bf0533608cb3790a9',
  '0002_webhooks.sql': '31c04d1ab44d66460c6ccacdf5517025abe7aa7731cee53977c5dda6246d272f',
  '0003_delivery_claims.sql': 'eef50df6f36f41b6ebee00298b843c6bd0bb6007e5dada1323727bf147674268',
  '0004_managed_work.sql': '992fc271697d74c6e66ad9c2559008b0e8224425dac0d8edb4760fad9d2724e5',
  '0005_labels.sql': 'e0f8b1d254fb95a49bba2dd698353c744dfcd0f6115aa2f3ff358ba374de9f8d',
  '0006_trace_context.sql': '9406e9a5ff8daac8381bc6085ad560aefca8a292a7487532055b67075770011f',
  '0007_input_requests.sql': 'b610a882601c39d52a002262ecf88bf6cb70837b600b884ca79b3950fa7643c7',
  '0008_steps.sql': 'd21722fecfea6a836c823dce6565b0b620c901996aea11a1daab181559cd8cf7',
  '0009_schedules.sql': '36566af3d185c0783fb7378b212f15533c049677ff67b86814c8e28bd78ef98e',
  '0011_a2a_config_ids.sql': '1871270cd1d4eedaea14aa288b24a1af27eb79a9b56e6d09e7d53d9c5926a613',
  '0012_flow_control.sql': '2c7cf80fa0128510b777879123025045fbd44ea916dbec748d5c2ef134c53ca8',
  '0013_debounce.sql': 'ffafcf731476e2052b06806f25eb0427cbebb3496f185503cf2a379921cbcf18',
  '0014_accept_path.sql': 'd34859ad8ab3263e321e11527d4d5e2319cfe74b07278f9564c66d8211ae8720',
  '0015_run_time.sql': 'c0c14bd5d131cc4fa3321bf886dc57ce6829648d6173a150040433fc5f048ad1',
  '0016_claim_plans.sql': '1aa8d53ba743a2ab55ce75aba598741c211c46881f428f99a5f49ad5fce60614',
  '0017_child_ended_locks.sql': '63af69a80c16a45b842410ef48199d9de337ef01e28555b8c7d13fd6df79b5f6',
  '0018_outbox_only_with_webhooks.sql':
    '2a5ef54db83539b3ede8d5a8cca20782eed9c397c2d3124e46c971eee21485d2',
  '0019_fair_claim_rounds.sql': 'ef007baff75dad1da4f5de9248a8e748ec2def62529b2361ea7d22cf8c8d8e92',
};

const DIR = new URL('../../migrations/', import.meta.url);
const sha256 = (name: string) =>
  createHash('sha256')
    .update(readFileSync(new URL(name, DIR)))
    .digest('hex');
const files = readdirSync(DIR).filter((name) => /^\d+_[\w-]+\.sql$/.test(name));

describe('landed migrations', () => {
  it('are all still there', () => {
    for (const name of Object.keys(LANDED))
      expect(files, `migrations/${name} landed and must never be removed`).toContain(name);
  });

  for (const [name, hash] of Object.entries(LANDED)) {
    it(`${name} is unchanged since it landed`, () => {
      expect(
        sha256(name),
        `migrations/${name} changed after it landed. A landed migration is never edited: undo ` +
          'the edit and put the change in a new numbered migration.',
      ).toBe(hash);
    });
  }

  it('are every migration there is', () => {
    for (const name of files)
      expect(
        LANDED[name],
        `migrations/${name} is not recorded. When a migration lands, add its sha256 ` +
          `(${sha256(name)}) to LANDED in test/db/migrations-landed.test.ts.`,
      ).toBeDefined();
  });
});
