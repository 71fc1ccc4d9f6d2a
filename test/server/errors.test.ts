// The pure decisions behind the service's answers: error classification, the metrics outcome
// of a status code, and readiness.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyError, MalformedJsonError, notFoundBody } from '../../src/server/errors.ts';
import { outcomeOf } from '../../src/server/metrics.ts';
import { readiness } from '../../src/server/probes.ts';

function fastifyError(code: string, statusCode: number, message = 'fastify says no'): Error {
  return Object.assign(new Error(message), { code, statusCode });
}

const classified: Array<[string, unknown, number, string, RegExp]> = [
  [
    'schema validation',
    Object.assign(new Error("body must have required property 'parent'"), { validation: [], statusCode: 400 }),
    400,
    'not_a_hook_request',
    /not a Metacontroller hook request: body must have required property 'parent'/,
  ],
  [
    'our JSON parser',
    new MalformedJsonError('request body is not valid JSON: Unexpected end'),
    400,
    'malformed_json',
    /^request body is not valid JSON: Unexpected end$/,
  ],
  ['empty JSON body', fastifyError('FST_ERR_CTP_EMPTY_JSON_BODY', 400), 400, 'malformed_json', /empty/],
  [
    'invalid JSON from fastify',
    fastifyError('FST_ERR_CTP_INVALID_JSON_BODY', 400),
    400,
    'malformed_json',
    /not valid JSON/,
  ],
  [
    'body too large',
    fastifyError('FST_ERR_CTP_BODY_TOO_LARGE', 413),
    413,
    'body_too_large',
    /larger than 2048 bytes \(BODY_LIMIT_BYTES\)/,
  ],
  [
    'media type',
    fastifyError('FST_ERR_CTP_INVALID_MEDIA_TYPE', 415),
    415,
    'unsupported_media_type',
    /application\/json/,
  ],
  [
    'content length mismatch',
    fastifyError('FST_ERR_CTP_INVALID_CONTENT_LENGTH', 400),
    400,
    'bad_request',
    /Content-Length/,
  ],
  [
    'another client error keeps its status',
    fastifyError('FST_ERR_SOMETHING', 431, 'headers too large'),
    431,
    'bad_request',
    /^headers too large$/,
  ],
  ['a plain throw is ours', new TypeError('x is undefined'), 500, 'internal_error', /changed nothing.*x is undefined/],
  ['a 5xx error is ours', fastifyError('FST_ERR_FAILED', 503), 500, 'internal_error', /retry/],
  ['a thrown string', 'kaput', 500, 'internal_error', /kaput/],
  ['a thrown null', null, 500, 'internal_error', /null/],
];
for (const [name, error, statusCode, code, message] of classified) {
  test(`classifyError: ${name} -> ${statusCode} ${code}`, () => {
    const verdict = classifyError(error, 2048);
    assert.equal(verdict.statusCode, statusCode);
    assert.equal(verdict.body.error, code);
    assert.match(verdict.body.message, message);
    assert.equal(verdict.ours, statusCode >= 500);
  });
}

test('notFoundBody lists the routes and shortens absurd URLs', () => {
  const body = notFoundBody('GET', `/${'a'.repeat(5000)}`);
  assert.equal(body.error, 'not_found');
  assert.ok(body.message.length < 400);
  assert.match(body.message, /POST \/sync, \/finalize, \/customize/);
});

const outcomes: Array<[number, boolean, string]> = [
  [200, false, 'ok'],
  [200, true, 'invalid_spec'],
  [400, false, 'bad_request'],
  [413, false, 'bad_request'],
  [415, false, 'bad_request'],
  [500, false, 'error'],
  [500, true, 'error'],
];
for (const [status, invalid, outcome] of outcomes) {
  test(`outcomeOf(${status}, invalidSpec=${invalid}) = ${outcome}`, () => {
    assert.equal(outcomeOf(status, invalid), outcome);
  });
}

const readinessCases: Array<[boolean, boolean, boolean]> = [
  [false, false, false],
  [true, false, true],
  [true, true, false],
  [false, true, false],
];
for (const [listening, draining, ready] of readinessCases) {
  test(`readiness: listening=${listening} draining=${draining} -> ${ready ? 'ready' : 'not ready'}`, () => {
    const verdict = readiness(listening, { draining });
    assert.equal(verdict.ready, ready);
    if (!verdict.ready) assert.ok(verdict.reason.length > 0);
  });
}
