import { join } from 'node:path';
import type { Plugin } from 'graphql-yoga';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIRECT_PATH_HOOKS, servedDirectly } from '../../../src/faces/graphql/direct-hooks.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';

/**
 * The seam between yoga and the direct POST path (src/faces/graphql/direct-hooks.ts): every
 * hook a plugin of the installed graphql-yoga can have is accounted for, and each is honoured
 * as the table says. Upgrading yoga to a version with a new hook fails here until the hook is
 * listed (meanwhile a plugin with it turns the direct path off).
 */

type Fate = (typeof DIRECT_PATH_HOOKS)[keyof typeof DIRECT_PATH_HOOKS];
const hooksThat = (fate: Fate) =>
  Object.entries(DIRECT_PATH_HOOKS)
    .filter(([, f]) => f === fate)
    .map(([hook]) => hook);

/** The members of graphql-yoga's `Plugin` type, read by TypeScript from the installed package. */
function yogaPluginHooks(): string[] {
  // A module of our own, where graphql-yoga resolves as it does for the sources.
  const file = join(import.meta.dirname, '__yoga-plugin-hooks__.ts');
  const text = `import type { Plugin } from 'graphql-yoga';
export type P = Plugin<Record<string, unknown>, Record<string, unknown>, Record<string, unknown>>;`;
  const options: ts.CompilerOptions = {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    skipLibCheck: true,
    noEmit: true,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (name, version, ...rest) =>
    name === file
      ? ts.createSourceFile(name, text, version)
      : getSourceFile.call(host, name, version, ...rest);
  host.fileExists = (name) => name === file || fileExists.call(host, name);
  host.readFile = (name) => (name === file ? text : readFile.call(host, name));
  const program = ts.createProgram([file], options, host);
  const checker = program.getTypeChecker();
  const alias = program.getSourceFile(file)!.statements.find(ts.isTypeAliasDeclaration)!;
  return checker.getPropertiesOfType(checker.getTypeAtLocation(alias.name)).map((p) => p.name);
}

describe('every hook of the installed yoga', () => {
  it('is in the direct path’s table: run, left to yoga, run once, or turning it off', () => {
    const hooks = yogaPluginHooks();
    expect(hooks).toContain('onExecute'); // the type was read, not an empty guess
    expect([...hooks].sort()).toEqual(Object.keys(DIRECT_PATH_HOOKS).sort());
  });

  it.each(hooksThat('off'))('%s turns the direct path off', (hook) => {
    expect(servedDirectly([{ onExecute() {} }, { [hook]: () => {} } as Plugin])).toBe(false);
  });

  it('is off too when it is none the table knows', () => {
    expect(servedDirectly([{ onSomethingNew() {} } as Plugin])).toBe(false);
  });
});

describe('a plugin with every hook the direct path runs', () => {
  const seen: string[] = [];
  let direct: boolean[] = [];
  const record =
    (hook: string) =>
    ({ args }: { args?: { contextValue?: { request?: Request } } } = {}) => {
      seen.push(hook);
      // The direct path reads the body itself and hands envelop a Request without one.
      const request = args?.contextValue?.request;
      if (hook === 'onExecute' && request) direct.push(request.body === null);
    };
  const plugin = Object.fromEntries(
    [...hooksThat('runs'), ...hooksThat('yoga'), 'onYogaInit', 'onSchemaChange'].map((hook) => [
      hook,
      record(hook),
    ]),
  ) as Plugin;
  let t: TestApp;
  let token: string;
  beforeAll(async () => {
    t = await startTestApp({ graphqlPlugins: [plugin] });
    token = await t.token('alice');
  });
  afterAll(() => t?.stop());

  const post = (query: string) =>
    fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query }),
    });

  it('keeps the direct path, and runs each of them on it', async () => {
    expect(servedDirectly([plugin])).toBe(true);
    // Yoga was built with the plugin: what runs once has run.
    expect(seen).toEqual(
      expect.arrayContaining(hooksThat('once').filter((h) => h !== 'onDispose')),
    );
    seen.length = 0;
    direct = [];
    const res = await post('{ __typename }');
    expect(await res.json()).toEqual({ data: { __typename: 'Query' } });
    expect(direct).toEqual([true]);
    expect([...new Set(seen)].sort()).toEqual(hooksThat('runs').sort());
  });

  it('leaves a subscription to yoga, which runs onSubscribe', async () => {
    seen.length = 0;
    const res = await post(
      'subscription { taskUpdated(id: "00000000-0000-4000-8000-000000000000") { id } }',
    );
    await res.text();
    expect(seen).toContain('onSubscribe');
  });
});
