// JSON objects as the tests read them: a plain object (not null, not an array) is a record.

export type JsonRecord = Record<string, unknown>;

/** True for a plain object: not null, not an array. */
export function isRecord(value: unknown): value is JsonRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `value` if it is a record, else an empty one (for reading optional nested fields). */
export function asRecord(value: unknown): JsonRecord {
  return isRecord(value) ? value : {};
}
