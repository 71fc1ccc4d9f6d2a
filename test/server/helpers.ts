// Shared by the server tests: the curl request fixture, loggers, and reading observed children.
import { readFileSync } from 'node:fs';
import { pino, type Logger } from 'pino';
import { isRecord } from '../support/records.ts';

export const REPO_ROOT = new URL('../../', import.meta.url);
export const FIXTURE_TEXT = readFileSync(new URL('test/fixtures/sync-request.json', REPO_ROOT), 'utf8');

/** A fresh deep copy of test/fixtures/sync-request.json, free to mutate. */
export function syncRequest(): Record<string, unknown> {
  return JSON.parse(FIXTURE_TEXT) as Record<string, unknown>;
}

export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

/** A logger whose JSON lines land, parsed, in `lines`. */
export function capturingLogger(level = 'info'): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino(
    { level },
    { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  return { logger, lines };
}

/** `Kind/name` of every well-formed observed child in a request's `children` map of maps. */
export function observedChildIds(request: unknown): string[] {
  const children = isRecord(request) ? request['children'] : undefined;
  if (!isRecord(children)) return [];
  const ids: string[] = [];
  for (const group of Object.values(children)) {
    if (!isRecord(group)) continue;
    for (const child of Object.values(group)) {
      const id = childId(child);
      if (id !== undefined) ids.push(id);
    }
  }
  return ids;
}

export function childId(child: unknown): string | undefined {
  if (!isRecord(child) || typeof child['kind'] !== 'string' || !isRecord(child['metadata'])) return undefined;
  const name = child['metadata']['name'];
  return typeof name === 'string' ? `${child['kind']}/${name}` : undefined;
}

/** The response's status reports an invalid spec (condition reason InvalidSpec). */
export function reportsInvalidSpec(response: unknown): boolean {
  const status = isRecord(response) ? response['status'] : undefined;
  const conditions = isRecord(status) ? status['conditions'] : undefined;
  return Array.isArray(conditions) && conditions.some((c) => isRecord(c) && c['reason'] === 'InvalidSpec');
}
