import type { Logger } from 'pino';
import { ServiceError } from '../errors.js';
import { type AuditedCall, AuditLog } from './audit.js';
import { RateLimiter } from './rate-limit.js';
import type { Actor } from './requests.js';
import { type Operation, SCOPE_OF } from './scopes.js';

/**
 * What every task operation passes through: the scope its token needs, the actor's rate
 * limit, and its one audit line, whether it succeeded, failed with a code, or was refused.
 */
export class Gate {
  private readonly audit: AuditLog;

  constructor(
    log: Logger,
    private readonly rateLimiter = new RateLimiter(),
  ) {
    this.audit = new AuditLog(log);
  }

  /**
   * Refuses, and audits, an actor whose token lacks the scope `operation` needs (`SCOPE_OF`,
   * the one table). The faces ask at their door, before reading a body; `name` is the
   * operation as the audit trail names it, when the face's method says it better.
   * @throws ServiceError FORBIDDEN naming the scope
   */
  authorize(
    actor: Actor,
    operation: Operation,
    taskId: string | null = null,
    name: string = operation,
  ): void {
    const scope = SCOPE_OF[operation];
    if (actor.scopes?.has(scope)) return;
    this.audit.refused(actor.id, name, taskId, 'FORBIDDEN');
    throw new ServiceError('FORBIDDEN', `The token lacks the ${scope} scope.`, { scope });
  }

  /**
   * Audits an operation refused before the service could ask: no valid token (`principal`
   * null), or a field the GraphQL schema refused. Same line as every other task operation.
   */
  refused(...refusal: Parameters<AuditLog['refused']>): void {
    this.audit.refused(...refusal);
  }

  /**
   * Runs `run` once the actor's rate limit allows it (RATE_LIMITED, audited like any other
   * refusal) and writes its audit line: `describe` names the task and the outcome.
   */
  around<T>(actor: Actor, ...call: AuditedCall<T>): Promise<T> {
    const [operation, taskId, run, describe] = call;
    const limited = async () => {
      this.rateLimiter.take(actor.id);
      return run();
    };
    return this.audit.around(actor.id, operation, taskId, limited, describe);
  }
}
