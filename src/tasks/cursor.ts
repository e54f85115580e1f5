import { ServiceError } from '../errors.js';
import type { Task } from './task.js';
import { isTaskId } from './validation.js';

/** A position in an owner's newest-first list: opaque to clients, the same on every face. */
export interface ListPosition {
  createdAt: Date;
  id: string;
}

export function encodeCursor(task: Pick<Task, 'createdAt' | 'id'>): string {
  return Buffer.from(`${task.createdAt.toISOString()}|${task.id}`).toString('base64url');
}

/** @throws ServiceError BAD_USER_INPUT for anything `encodeCursor` did not write */
export function decodeCursor(cursor: string): ListPosition {
  const [at, id] = Buffer.from(cursor, 'base64url').toString().split('|');
  const createdAt = new Date(at ?? '');
  if (!id || !isTaskId(id) || Number.isNaN(createdAt.getTime())) {
    throw new ServiceError('BAD_USER_INPUT', 'Malformed cursor.');
  }
  return { createdAt, id };
}
