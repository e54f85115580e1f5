import { randomUUID } from 'node:crypto';
import { type Message, type Part, Role } from '@a2a-js/sdk';
import type { TaskKind } from '../../tasks/kinds.js';
import { dataPart, firstData, textPart } from './mapping.js';

/**
 * What the default skill (`A2A_DEFAULT_SKILL`) reads from a message, as generic A2A clients
 * write one (DESIGN §10): its text parts joined by newlines (`""` for none), its first data
 * part (`null` for none), and its id. A start naming no skill and every answer to a task of
 * that kind are read this way.
 */
export interface MessageInput {
  text: string;
  data: unknown;
  messageId: string;
}

export function messageInput(message: Message): MessageInput {
  const texts: string[] = [];
  for (const part of message.parts)
    if (part.content?.$case === 'text') texts.push(part.content.value);
  return {
    text: texts.join('\n'),
    data: firstData(message.parts) ?? null,
    messageId: message.messageId,
  };
}

/**
 * The answer to a message naming no skill when there is no default one: a message a person or
 * an agent can act on, naming the skills, their input schemas and how to send one. Nothing is
 * stored for it.
 */
export function skillsMessage(kinds: readonly TaskKind[]): Message {
  const names = kinds.map((kind) => kind.name).join(', ');
  const text =
    `Name the skill to run in message.metadata.skill (one of: ${names}) and send its input ` +
    "as a data part, valid against the skill's inputSchema listed in the data part of this " +
    'message. Example: {"role":"ROLE_USER","parts":[{"data":{…}}],"metadata":{"skill":"' +
    `${kinds[0]?.name ?? '<skill>'}"}}.`;
  const parts: Part[] = [
    textPart(text),
    dataPart({
      skills: kinds.map((kind) => ({
        id: kind.name,
        description: kind.description,
        inputSchema: kind.inputSchema,
      })),
      howToName: { metadata: { skill: '<id>' }, parts: [{ data: '<input>' }] },
    }),
  ];
  return {
    messageId: randomUUID(),
    contextId: '',
    taskId: '',
    role: Role.ROLE_AGENT,
    parts,
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}
