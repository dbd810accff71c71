// Hostile input (issue 12): one authenticated request must never stop the runtime, reach another user's
// calls, or answer 500. Each test sends what an attacker would, over real HTTP, to the full runtime.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { HOSTILE_FUNCTION_TIMEOUT_MS, startHostileRuntime, type HostileRuntime } from './fixtures/hostile-app';
import { RequestContext, RequestStopped } from '../../runtime/graphql/context';

let app: HostileRuntime;
let token: string;

before(async () => {
  app = await startHostileRuntime();
  token = await app.userToken('mallory@example.com');
});
after(async () => { await app?.close(); });

const serviceCall = (name: string, args: Record<string, unknown>) =>
  app.post('/functions/call', { service: 'mongodb-atlas', name, arguments: [{ database: 'tracker', collection: 'Task', ...args }] }, token);
const graphql = (query: string, variables?: unknown) => app.post('/graphql', { query, ...(variables === undefined ? {} : { variables }) }, token);

function assertCleanError(res: { status: number; body: any }, status: number | number[], pattern?: RegExp): void {
  const allowed = Array.isArray(status) ? status : [status];
  assert.ok(allowed.includes(res.status), `status ${res.status}: ${JSON.stringify(res.body).slice(0, 300)}`);
  assert.equal(typeof res.body?.error, 'string', JSON.stringify(res.body).slice(0, 300));
  if (pattern) assert.match(res.body.error, pattern);
}

describe('regular expressions from clients run in linear time', () => {
  const evil = '^(a+)+$';
  before(async () => {
    const { token: owner, userId } = await app.userLogin('regex-owner@example.com');
    const res = await app.post('/functions/call', {
      service: 'mongodb-atlas', name: 'insertOne',
      arguments: [{ database: 'tracker', collection: 'Task', document: { _id: { $oid: '65a000000000000000000001' }, _partition: userId, name: `${'a'.repeat(32)}!`, status: 'open', isComplete: false } }],
    }, owner);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    token = owner;
  });
  const timed = async (label: string, send: () => Promise<{ status: number; body: any }>) => {
    const started = Date.now();
    // Another client's request, sent while the hostile one runs, is answered promptly too.
    const [res, other] = await Promise.all([withDeadline(send(), 5000), withDeadline(app.post('/location', {}).catch(() => ({ status: 0, body: undefined })), 5000)]);
    assert.ok(Date.now() - started < 5000, `${label} took ${Date.now() - started} ms`);
    assert.ok(other.status > 0);
    return res;
  };
  test('$regex with a catastrophic pattern answers at once', async () => {
    const res = await timed('find', () => serviceCall('find', { query: { name: { $regex: evil } } }));
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body, []);
    const hit = await serviceCall('find', { query: { name: { $regex: '^(a+)+!$', $options: 'i' } } });
    assert.equal(hit.body.length, 1);
  });
  test('a BSON regular expression value, in $in and under $not, answers at once', async () => {
    const regex = { $regularExpression: { pattern: evil, options: 'i' } };
    for (const query of [{ name: regex }, { name: { $in: [regex, 'x'] } }, { name: { $not: regex } }, { name: { $nin: [regex] } }]) {
      const res = await timed(JSON.stringify(query), () => serviceCall('find', { query }));
      assert.equal(res.status, 200, JSON.stringify(res.body));
    }
  });
  test('aggregation: $match and the $regexMatch expression answer at once', async () => {
    const res = await timed('aggregate', () => serviceCall('aggregate', {
      pipeline: [{ $match: { name: { $regex: evil } } }, { $project: { m: { $regexMatch: { input: '$name', regex: evil } } } }],
    }));
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const expr = await timed('$expr', () => serviceCall('find', { query: { $expr: { $regexMatch: { input: '$name', regex: evil } } } }));
    assert.equal(expr.status, 200, JSON.stringify(expr.body));
    assert.deepEqual(expr.body, []);
  });
  test('count runs patterns in linear time too', async () => {
    const res = await timed('count', () => serviceCall('count', { query: { name: { $regex: evil } } }));
    assert.equal(res.status, 200, JSON.stringify(res.body));
  });
  test('patterns that need backtracking (backreferences, lookaround) are refused with a 400 naming them', async () => {
    for (const pattern of ['(a)\\1', '(?=a)b', 'a(?!b)']) {
      const res = await serviceCall('find', { query: { name: { $regex: pattern } } });
      assertCleanError(res, 400);
      assert.ok(res.body.error.includes(pattern), res.body.error);
    }
    assertCleanError(await serviceCall('find', { query: { name: { $regex: 'a', $options: 'q' } } }), 400, /option.*q.* is not supported|invalid flag in regex options: q/);
  });
});

describe('client-supplied names are looked up as own properties only', () => {
  for (const name of ['__proto__', 'constructor', 'hasOwnProperty', 'valueOf', 'toString', '__defineGetter__', 'isPrototypeOf']) {
    test(`service action '${name}' is not found (4xx), never run`, async () => {
      const res = await serviceCall(name, {});
      assertCleanError(res, 404, /not an action/);
      assert.equal(res.body.error_code, 'ServiceCommandNotFound');
    });
    test(`function '${name}' is not found`, async () => {
      assertCleanError(await app.post('/functions/call', { name, arguments: [] }, token), 404);
    });
    test(`provider '${name}' is not found`, async () => {
      assertCleanError(await app.post(`/auth/providers/${encodeURIComponent(name)}/login`, {}), [400, 404]);
    });
  }
});

describe('invalid database and collection names', () => {
  for (const [database, collection] of [['../../etc', 'Task'], ['a/b', 'Task'], ['..', 'Task'], ['tracker', 'system.users'], ['tracker', 'x\u0000y'], ['', 'Task']]) {
    test(`${JSON.stringify(database)}.${JSON.stringify(collection)} is a 400 naming the invalid name`, async () => {
      const res = await app.post('/functions/call', { service: 'mongodb-atlas', name: 'find', arguments: [{ database, collection, query: {} }] }, token);
      assertCleanError(res, 400, /Invalid (database|collection) name|needs string/);
    });
  }
});

describe('EJSON values out of range for their type are refused, naming the value', () => {
  const cases: [string, unknown][] = [
    ['$numberInt above 2^31', { $numberInt: '99999999999999' }],
    ['$numberInt below -2^31', { $numberInt: '-2147483649' }],
    ['$numberInt not an integer', { $numberInt: '1.5' }],
    ['$numberInt not a number', { $numberInt: 'abc' }],
    ['$numberLong above 2^63', { $numberLong: '9223372036854775808' }],
    ['$numberLong malformed', { $numberLong: '12abc' }],
    ['$numberDouble malformed', { $numberDouble: 'abc' }],
    ['$numberDouble overflowing', { $numberDouble: '1e999' }],
    ['$numberDecimal malformed', { $numberDecimal: 'one' }],
    ['$date out of range', { $date: { $numberLong: '99999999999999999' } }],
    ['$date malformed', { $date: 'yesterday' }],
    ['$oid malformed', { $oid: 'zz' }],
    ['$binary malformed', { $binary: { base64: '!!', subType: '00' } }],
  ];
  for (const [label, value] of cases) {
    test(label, async () => {
      const res = await serviceCall('find', { query: { n: value } });
      assertCleanError(res, 400);
      const inner = Object.values(value as Record<string, unknown>)[0];
      const shown = typeof inner === 'string' ? inner : JSON.stringify(Object.values(inner as object)[0]);
      assert.ok(res.body.error.includes(shown), `the error names ${shown}: ${res.body.error}`);
    });
  }
  test('a collection name with slashes and dots is only a name, never a path', async () => {
    const res = await app.post('/functions/call', { service: 'mongodb-atlas', name: 'find', arguments: [{ database: 'tracker', collection: '../../../tmp/x', query: {} }] }, token);
    assert.ok(res.status < 500, String(res.status));
  });
  test('values within range still work', async () => {
    const res = await serviceCall('find', { query: { n: { $numberInt: '-2147483648' }, m: { $numberLong: '-9223372036854775808' }, d: { $numberDouble: 'Infinity' }, t: { $date: { $numberLong: '8640000000000000' } } } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  });
});

describe('unsupported HTTP methods', () => {
  test('CONNECT gets a 405 JSON answer, not a dropped connection', async () => {
    const raw = await rawRequest(app.port, 'CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n');
    assert.match(raw, /^HTTP\/1\.1 405 /);
    assert.match(raw, /content-type: application\/json/i);
    assert.match(raw, /"error":"method CONNECT is not supported"/);
  });
  for (const method of ['TRACE', 'PROPFIND', 'BREW']) {
    test(`${method} gets a JSON 4xx`, async () => {
      const raw = await rawRequest(app.port, `${method} /api/client/v2.0/app/${app.appId}/location HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
      assert.match(raw, /^HTTP\/1\.1 4\d\d /);
      assert.match(raw, /"error":/);
    });
  }
});

describe('GraphQL documents are bounded before they are compiled', () => {
  test('a 2 KB fragment bomb is refused at once, and the runtime keeps serving', async () => {
    const fragments = Array.from({ length: 40 }, (_, i) => i === 39
      ? `fragment F${i} on Task { _id }`
      : `fragment F${i} on Task { ...F${i + 1} ...F${i + 1} }`);
    const query = `query Bomb { tasks { ...F0 } } ${fragments.join(' ')}`;
    assert.ok(query.length < 2500);
    const res = await withDeadline(graphql(query), 5000);
    assert.equal(res.status, 200);
    assert.equal(res.body.data, null);
    assert.match(res.body.errors[0].message, /expands to .* field selections.*limit is 2000/);
    assert.equal((await graphql('{ tasks { _id } }')).status, 200);
  });
  test('10,000 aliases of a plain field are refused', async () => {
    const query = `{ ${Array.from({ length: 10_000 }, (_, i) => `a${i}: tasks { _id }`).join(' ')} }`;
    const res = await withDeadline(graphql(query), 5000);
    assert.ok(res.status === 200 || res.status === 400, String(res.status));
    assert.match(res.body.errors[0].message, /tokens|at its root/);
  });
  test('300 aliases of a plain field are refused as too many root fields', async () => {
    const res = await graphql(`{ ${Array.from({ length: 300 }, (_, i) => `a${i}: tasks { _id }`).join(' ')} }`);
    assert.match(res.body.errors[0].message, /selects 300 fields at its root; the limit is 100|selects 300 fields at its root \(aliases and fragments counted\); the limit is 100/);
  });
  test('a request may start only a bounded number of function calls', async () => {
    const fields = Array.from({ length: 20 }, (_, i) => `s${i}: taskSummary(input: { owner: "o", status: "s" }) { count }`);
    const fragment = `fragment S on Query { ${fields.join(' ')} }`;
    const res = await graphql(`{ ...S } ${fragment}`);
    assert.equal(res.status, 200);
    assert.equal(res.body.data?.s0?.count ?? 0, 0);
    const many = await graphql(`{ ${Array.from({ length: 99 }, (_, i) => `s${i}: taskSummary(input: { owner: "o", status: "s" }) { count }`).join(' ')} }`);
    assert.equal(many.status, 200, JSON.stringify(many.body).slice(0, 200));
  });
  test('a 10,000-deep selection set is a GraphQL error, not a 500', async () => {
    const query = `${'{ tasks '.repeat(10_000)}{ _id }${' }'.repeat(10_000)}`;
    const res = await graphql(query);
    assert.ok(res.status === 200 || res.status === 400, String(res.status));
    assert.equal(res.body.data, null);
    assert.ok(res.body.errors.length > 0);
  });
  test('a 1,000-deep nested AND filter literal is a GraphQL error, not a 500', async () => {
    const filter = `${'{ AND: ['.repeat(1000)}{ _id_exists: true }${'] }'.repeat(1000)}`;
    const res = await graphql(`{ tasks(query: ${filter}) { _id } }`);
    assert.ok(res.status === 200 || res.status === 400, String(res.status));
    assert.match(res.body.errors[0].message, /nests .* 1001 levels deep|levels deep/);
  });
  test('10,000-deep nested variables are refused, not a 500', async () => {
    const filter = `${'{"AND":['.repeat(10_000)}{"_id_exists":true}${']}'.repeat(10_000)}`;
    const res = await app.postText('/graphql', `{"query":"query Q($q: TaskQueryInput) { tasks(query: $q) { _id } }","variables":{"q":${filter}}}`, token);
    assert.equal(res.status, 400);
    assert.match(res.body.errors[0].message, /"variables" nest/);
  });
  test('a query of too many tokens is refused', async () => {
    const res = await graphql(`{ tasks { ${'_id '.repeat(30_000)} } }`);
    assert.match(res.body.errors[0].message, /token/i);
  });
});

function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([promise, new Promise<T>((_, reject) => { timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms); })])
    .finally(() => clearTimeout(timer));
}

function rawRequest(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(text));
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk) => { received += chunk; if (/\r\n\r\n[\s\S]*\}$/.test(received)) socket.end(); });
    socket.on('end', () => resolve(received));
    socket.on('close', () => resolve(received));
    socket.on('error', reject);
    socket.setTimeout(5000, () => { socket.destroy(); reject(new Error('no answer within 5 s')); });
  });
}

describe('hostile functions never fail another user\'s calls', () => {
  let innocentToken: string;
  before(async () => { innocentToken = await app.userToken('innocent@example.com'); });

  const call = (name: string, args: unknown[] = [], as = token) => app.post('/functions/call', { name, arguments: args }, as);

  /** Runs `hostile` while the innocent user keeps calling functions; every innocent call must succeed. */
  async function whileInnocentCalls(hostile: () => Promise<{ status: number; body: any }>) {
    let stop = false;
    const failures: string[] = [];
    let innocentCalls = 0;
    const innocent = (async () => {
      while (!stop) {
        const [echo, wait] = await Promise.all([call('echo', [{ n: innocentCalls }], innocentToken), call('slowWait', [50], innocentToken)]);
        innocentCalls += 2;
        if (echo.status !== 200 || echo.body?.n?.$numberInt !== String(innocentCalls - 2)) failures.push(`echo: ${echo.status} ${JSON.stringify(echo.body)}`);
        if (wait.status !== 200 || wait.body !== 'waited') failures.push(`slowWait: ${wait.status} ${JSON.stringify(wait.body)}`);
      }
    })();
    const started = Date.now();
    const res = await withDeadline(hostile(), HOSTILE_FUNCTION_TIMEOUT_MS + 10_000);
    const elapsed = Date.now() - started;
    // Keep the innocent user going a little longer: whatever the hostile call left behind must not hit them.
    const until = Date.now() + 1500;
    while (Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 50));
    stop = true;
    await innocent;
    assert.deepEqual(failures, [], `innocent calls failed (${innocentCalls} made)`);
    assert.ok(innocentCalls > 4, `only ${innocentCalls} innocent calls were answered`);
    return { res, elapsed };
  }

  test('a function that never returns is stopped at the time limit', async () => {
    const { res, elapsed } = await whileInnocentCalls(() => call('loop'));
    assertCleanError(res, 400, /execution time limit/);
    assert.ok(elapsed < HOSTILE_FUNCTION_TIMEOUT_MS + 2000, `answered after ${elapsed} ms`);
  });
  test('a function that returns leaving a blocking setInterval: its timers end with it, and it is named in the log', async () => {
    const { res } = await whileInnocentCalls(async () => {
      const first = await call('leaveInterval');
      // Another round after the leftover timer would have taken over the worker.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      return first;
    });
    assert.equal(res.status, 200);
    assert.equal(res.body, 'done');
    assert.ok(app.logs.some((line) => line.includes('[function leaveInterval]') && line.includes('timer(s) pending')), app.logs.join('\n'));
  });
  test('a function that throws answers its error', async () => {
    const { res } = await whileInnocentCalls(() => call('throws'));
    assertCleanError(res, 400, /thrown on purpose/);
  });
  test('typed arrays beyond the memory limit stop the function with a clear error', async () => {
    const before = process.memoryUsage.rss();
    let peak = before;
    const sampler = setInterval(() => { peak = Math.max(peak, process.memoryUsage.rss()); }, 10);
    try {
      const { res } = await whileInnocentCalls(() => call('typedArrays'));
      assertCleanError(res, 400, /memory limit/);
    } finally {
      clearInterval(sampler);
    }
    assert.ok(peak - before < 1.5 * 1024 ** 3, `memory grew by ${Math.round((peak - before) / 1048576)} MiB`);
    assert.ok(app.logs.some((line) => line.includes('[function typedArrays]') && line.includes('memory limit')), app.logs.join('\n'));
  });
  test('a heap that grows without end stops the function with a clear error', async () => {
    const { res } = await whileInnocentCalls(() => call('heap'));
    assertCleanError(res, 400, /memory limit|execution time limit/);
  });
  test('a 100 MiB result is refused whole with a clear error, never truncated', async () => {
    const { res } = await whileInnocentCalls(() => call('hugeString'));
    assertCleanError(res, 400, /result of function 'hugeString' cannot be returned: .*above the limit of 16777216 bytes/);
  });
  test('a million small objects are refused with the same clear error', async () => {
    const { res } = await whileInnocentCalls(() => call('manyObjects'));
    assertCleanError(res, 400, /result of function 'manyObjects' cannot be returned: .*above the limit of 16777216 bytes/);
  });
});

describe('the work of one GraphQL request is bounded', () => {
  const env = {
    model: {} as never,
    collectionFor: () => { throw new Error('no collection in this test'); },
    runFunction: async (name: string) => `ran ${name}`,
  };
  test('a request starts at most maxFunctionCalls function calls', async () => {
    const context = new RequestContext('user', env, { maxFunctionCalls: 2 });
    assert.equal(await context.runFunction('a', []), 'ran a');
    assert.equal(await context.runFunction('b', []), 'ran b');
    assert.throws(() => context.runFunction('c', []), (error: Error) => error instanceof RequestStopped && /more than 2 function calls/.test(error.message));
  });
  test('once the client has gone, no data access or function call starts', async () => {
    let gone = false;
    const context = new RequestContext('user', env, { maxFunctionCalls: 10, clientGone: () => gone });
    assert.equal(await context.runFunction('a', []), 'ran a');
    gone = true;
    assert.throws(() => context.runFunction('b', []), /client closed the connection/);
    assert.throws(() => context.collection({ dataSource: 'mongodb-atlas', database: 'tracker', collection: 'Task' }), /client closed the connection/);
  });
});
