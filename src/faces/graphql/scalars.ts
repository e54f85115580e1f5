import { GraphQLError, Kind, valueFromASTUntyped } from 'graphql';
import { builder } from './builder.js';

const badInput = (message: string) =>
  new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT' } });

builder.scalarType('DateTime', {
  description: 'An instant, as an ISO 8601 string in UTC.',
  serialize: (value) =>
    value instanceof Date ? value.toISOString() : new Date(value as string).toISOString(),
  parseValue: (value) => {
    const date = typeof value === 'string' ? new Date(value) : new Date(NaN);
    if (Number.isNaN(date.getTime())) throw badInput('DateTime must be an ISO 8601 string.');
    return date;
  },
  parseLiteral: (ast) => {
    if (ast.kind !== Kind.STRING || Number.isNaN(new Date(ast.value).getTime()))
      throw badInput('DateTime must be an ISO 8601 string.');
    return new Date(ast.value);
  },
});

builder.scalarType('JSON', {
  description: 'Any JSON value.',
  serialize: (value) => value,
  parseValue: (value) => value,
  // Variables as a rest parameter: graphql-jit writes a warning to stderr (outside the log) for a
  // parseLiteral that declares them, as it folds literals without them. It compiles no operation
  // with a variable inside a literal (jit.ts `literalsAreConstant`), so its folding is exact.
  parseLiteral: (ast, ...variables) => valueFromASTUntyped(ast, variables[0]),
});
