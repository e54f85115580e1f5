import { type GraphQLError, getOperationAST } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { context, failed, SpanKind, trace, tracer } from '../../tracing/tracer.js';

/**
 * An envelop plugin giving each GraphQL operation a span (DESIGN §13), named after the
 * OpenTelemetry GraphQL conventions (`mutation StartTask`), under the HTTP request's span, with
 * the operation executed inside it: a task started by it continues this trace. It hooks
 * execution only, so the direct POST path (faces/graphql/fast-post.ts) stays on. Added only
 * while tracing is on.
 */
export function useOperationSpans(): Plugin {
  return {
    onExecute({ args, executeFn, setExecuteFn }) {
      const operation = getOperationAST(args.document, args.operationName ?? undefined);
      const type = operation?.operation ?? 'query';
      const name = operation?.name?.value;
      const parent = context.active();
      const span = tracer.startSpan(
        name ? `${type} ${name}` : type,
        {
          kind: SpanKind.INTERNAL,
          attributes: {
            'graphql.operation.type': type,
            ...(name ? { 'graphql.operation.name': name } : {}),
          },
        },
        parent,
      );
      const active = trace.setSpan(parent, span);
      setExecuteFn((execArgs) => context.with(active, () => executeFn(execArgs)));
      return {
        onExecuteDone({ result }) {
          const errors =
            'errors' in result ? (result.errors as readonly GraphQLError[]) : undefined;
          if (errors?.length) failed(span, errors[0], errors[0]?.message);
          span.end();
        },
      };
    },
  };
}
