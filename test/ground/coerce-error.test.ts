import { describe, expect, it } from 'vitest';
import { coerceError } from '../../src/errors.js';
import { failureOf } from '../../src/tasks/runner/outcome.js';

/** Values a handler (or a library under it) may throw, each hostile to naive printing. */
function hostile(): Array<[string, unknown]> {
  const cyclic: Record<string, unknown> = { name: 'loop' };
  cyclic.self = cyclic;
  const throwingGetter = {
    get boom() {
      throw new Error('getter');
    },
  };
  const throwingToString = {
    toString() {
      throw new Error('toString');
    },
  };
  const throwingToJson = {
    toJSON() {
      throw new Error('toJSON');
    },
  };
  const revoked = Proxy.revocable({}, {});
  revoked.revoke();
  const trapEverything = new Proxy(
    {},
    {
      get() {
        throw new Error('get trap');
      },
      getPrototypeOf() {
        throw new Error('getPrototypeOf trap');
      },
      ownKeys() {
        throw new Error('ownKeys trap');
      },
    },
  );
  const badMessage = new Error('placeholder');
  Object.defineProperty(badMessage, 'message', {
    get() {
      throw new Error('message getter');
    },
  });
  const objectMessage = new Error('placeholder');
  (objectMessage as { message: unknown }).message = { not: 'a string' };
  return [
    ['a cyclic object', cyclic],
    ['a BigInt', 10n],
    ['an object holding a BigInt', { big: 10n }],
    ['null', null],
    ['undefined', undefined],
    ['a symbol', Symbol('thrown')],
    ['a number', 42],
    ['a function', function named() {}],
    ['an object with a throwing getter', throwingGetter],
    ['an object whose toString throws', throwingToString],
    ['an object whose toJSON throws', throwingToJson],
    ['a revoked proxy', revoked.proxy],
    ['a proxy whose every trap throws', trapEverything],
    ['an Error whose message getter throws', badMessage],
    ['an Error whose message is not a string', objectMessage],
  ];
}

describe('coerceError', () => {
  it.each(hostile())('turns %s into an Error with a message, keeping it as cause', (_, value) => {
    const err = coerceError(value);
    expect(err).toBeInstanceOf(Error);
    expect(typeof err.message).toBe('string');
    expect(err.message.length).toBeGreaterThan(0);
    expect(err.cause).toBe(value);
  });

  it('returns an Error as it is', () => {
    const err = new TypeError('kept');
    expect(coerceError(err)).toBe(err);
  });

  it('uses a thrown string as the message', () => {
    expect(coerceError('plain words').message).toBe('plain words');
  });

  it('describes what it can', () => {
    const cyclic: Record<string, unknown> = { name: 'loop' };
    cyclic.self = cyclic;
    expect(coerceError(cyclic).message).toBe(
      'Non-error thrown: {"name":"loop","self":"[Circular]"}',
    );
    expect(coerceError(10n).message).toBe('Non-error thrown: 10n');
    expect(coerceError({ big: 10n }).message).toBe('Non-error thrown: {"big":"10n"}');
    expect(coerceError(null).message).toBe('Non-error thrown: null');
    expect(coerceError(undefined).message).toBe('Non-error thrown: undefined');
    expect(coerceError(Symbol('thrown')).message).toBe('Non-error thrown: Symbol(thrown)');
  });

  it('keeps a long description short', () => {
    expect(coerceError({ text: 'x'.repeat(10_000) }).message.length).toBeLessThan(1_100);
  });
});

describe('failureOf', () => {
  it.each(hostile())('gives %s a task failure without throwing', (_, value) => {
    const failure = failureOf(coerceError(value));
    expect(failure.code).toBe('HANDLER_ERROR');
    expect(typeof failure.message).toBe('string');
    expect(failure.message.length).toBeGreaterThan(0);
  });

  it('survives an Error whose code getter throws', () => {
    const err = new Error('kept');
    Object.defineProperty(err, 'code', {
      get() {
        throw new Error('code getter');
      },
    });
    expect(failureOf(err)).toEqual({ code: 'HANDLER_ERROR', message: 'kept' });
  });
});
