// Authentication cost (issue 5), every figure a ratio measured in this run:
//   1. custom JWT logins per second over HTTP (RS256 tokens checked against a JWK URI key set that is
//      already fetched), vs the floor: the same cryptographic work done bare with jose in this process —
//      verify the incoming token against the same key set, sign an access and a refresh token (HS256,
//      the runtime's claims) — with as many logins in flight as the HTTP load has connections   goal ≥ 0.5×
//   2. a GraphQL request with `Authorization: Bearer` through the runtime, vs the same request to the
//      same runtime marked to skip authentication in-process and be served as the caller its token
//      stands for (same objects, same rule-checked data access)                              goal: auth adds ≤ 5%
// Servers run in child processes, autocannon and the key set server in this one.
// Run: node --import tsx bench/auth.bench.ts [--seconds N] [--rounds N] [--connections N]
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { createRemoteJWKSet, exportJWK, generateKeyPair, jwtVerify, SignJWT, type CryptoKey, type JWK } from 'jose';
import { APP_ID, AUTH_BYPASS_HEADER, createWorkspace, GENERATED_QUERY, ownerEmail, PASSWORD, PER_OWNER } from './fixtures/app';
import {
  combine, describeLoad, describeRounds, goalLine, measureAlternatingSlices, median, option, pairedRatio, post,
  requestsPerSecond, runLoad, startServer, type LoadResult, type ServerProcess,
} from './fixtures/load';

const SECONDS = option('seconds', 5);
const ROUNDS = option('rounds', 3);
const WARMUP_SECONDS = option('warmup', 2);
const CONNECTIONS = option('connections', 64);
// The effect measured (a few per cent) is smaller than the machine's drift between rounds of seconds,
// so the overhead alternates its two kinds of request in short slices (see measureAlternatingSlices).
const OVERHEAD_SECONDS = option('overhead-seconds', 120);
const SLICE_MS = option('slice-ms', 400);
/** Longer than nearly every request's latency under this load (p99 is a few tens of ms). */
const SETTLE_MS = option('settle-ms', 80);
/** Distinct users whose tokens the login load rotates through. */
const LOGIN_USERS = 64;
const LOGIN_GOAL = 0.7;
const AUTH_OVERHEAD_GOAL_PERCENT = 5;
const KID = 'bench-key';

interface KeySetServer { url: string; requests(): number; close(): Promise<void> }

async function startKeySetServer(jwk: JWK): Promise<KeySetServer> {
  let requests = 0;
  const body = JSON.stringify({ keys: [jwk] });
  const server = http.createServer((_req, res) => {
    requests++;
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`,
    requests: () => requests,
    close: () => new Promise((resolve) => { server.close(() => resolve()); server.closeAllConnections(); }),
  };
}

function loginToken(privateKey: CryptoKey, k: number): Promise<string> {
  return new SignJWT({ name: `Bench User ${k}` })
    .setProtectedHeader({ alg: 'RS256', kid: KID, typ: 'JWT' })
    .setSubject(`bench-user-${k}`).setAudience(APP_ID).setIssuedAt().setExpirationTime('1h')
    .sign(privateKey);
}

/** The claims `TokenService` puts in an access and a refresh token, so the floor signs payloads of the same size. */
function sessionClaims(sub: string) {
  const now = Math.floor(Date.now() / 1000);
  const deviceId = '000000000000000000000000';
  const domainId = randomBytes(12).toString('hex');
  const sessionId = randomBytes(12).toString('hex');
  const identity = { id: sub, provider_type: 'custom-token', provider_id: randomBytes(12).toString('hex') };
  return {
    access: {
      baas_device_id: deviceId, baas_domain_id: domainId, stitch_devId: deviceId, stitch_domainId: domainId,
      typ: 'access', sub, iss: sessionId, iat: now, exp: now + 1800,
    },
    refresh: {
      baas_data: null, baas_device_id: deviceId, baas_domain_id: domainId, baas_id: sessionId, baas_identity: identity,
      stitch_data: null, stitch_devId: deviceId, stitch_domainId: domainId, stitch_id: sessionId, stitch_ident: identity,
      typ: 'refresh', sub, iat: now, exp: now + 60 * 24 * 3600,
    },
  };
}

type HmacKey = Uint8Array | CryptoKey;

/** Logins' cryptographic work per second: `CONNECTIONS` loops, each verifying and signing one login at a time. */
async function cryptoFloor(tokens: string[], keySet: ReturnType<typeof createRemoteJWKSet>, hmacKey: HmacKey, seconds: number): Promise<number> {
  let done = 0;
  let next = 0;
  const deadline = performance.now() + seconds * 1000;
  const loop = async () => {
    while (performance.now() < deadline) {
      const { payload } = await jwtVerify(tokens[next++ % tokens.length]!, keySet, {
        algorithms: ['RS256'], requiredClaims: ['exp', 'sub', 'aud'], audience: APP_ID,
      });
      const claims = sessionClaims(payload.sub!);
      await new SignJWT(claims.access).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(hmacKey);
      await new SignJWT(claims.refresh).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(hmacKey);
      done++;
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: CONNECTIONS }, loop));
  return done / ((performance.now() - start) / 1000);
}

async function importedHmacKey(secret: Uint8Array<ArrayBuffer>): Promise<CryptoKey> {
  return crypto.subtle.importKey('raw', secret, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
}

async function main(): Promise<void> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const keySetServer = await startKeySetServer({ ...(await exportJWK(publicKey)), kid: KID, alg: 'RS256', use: 'sig' });
  const workspace = await createWorkspace({ jwkUri: keySetServer.url });
  const servers: ServerProcess[] = [];
  try {
    const runtime = await startServer({ kind: 'runtime', appDir: workspace.appDir, dataDir: workspace.copyData('runtime') });
    servers.push(runtime);
    const tokens = await Promise.all(Array.from({ length: LOGIN_USERS }, (_, k) => loginToken(privateKey, k)));
    const loginUrl = `${runtime.appUrl}/auth/providers/custom-token/login`;
    // The first logins create the users and fetch the key set; every later one finds both in place.
    for (const token of tokens) {
      const first = await post(loginUrl, { token });
      assert.equal(first.status, 200, first.text);
    }
    // The floor's key set is a second client of the same URL, fetched once here.
    const floorKeySet = createRemoteJWKSet(new URL(keySetServer.url));
    await jwtVerify(tokens[0]!, floorKeySet, { algorithms: ['RS256'], audience: APP_ID });
    const keySetFetches = keySetServer.requests();

    console.log(`auth bench: ${CONNECTIONS} connections / logins in flight, ${ROUNDS} rounds × ${SECONDS} s each after ${WARMUP_SECONDS} s warm-up`);
    console.log('runtime in a child process; autocannon, the JWK URI server and the crypto floor in this process');
    let rotation = 0;
    const loginLoad = {
      url: loginUrl, connections: CONNECTIONS,
      setupRequest: (request: { body?: string | Buffer }) => ({ ...request, method: 'POST', body: JSON.stringify({ token: tokens[rotation++ % tokens.length] }) }),
    };
    const rawSecret = new Uint8Array(randomBytes(48));
    const importedSecret = await importedHmacKey(rawSecret);
    await runLoad(loginLoad, WARMUP_SECONDS);
    await cryptoFloor(tokens, floorKeySet, rawSecret, WARMUP_SECONDS);
    const httpRounds: LoadResult[] = [];
    const rawFloors: number[] = [];
    const importedFloors: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      httpRounds.push(await runLoad(loginLoad, SECONDS));
      rawFloors.push(await cryptoFloor(tokens, floorKeySet, rawSecret, SECONDS));
      importedFloors.push(await cryptoFloor(tokens, floorKeySet, importedSecret, SECONDS));
    }
    const logins = requestsPerSecond(combine(httpRounds));
    const floors = rawFloors.map((raw, i) => Math.max(raw, importedFloors[i]!));
    const overFloor = pairedRatio(httpRounds.map(requestsPerSecond), floors);
    assert.equal(keySetServer.requests(), keySetFetches, 'the key set was fetched again during the load');
    console.log(`custom JWT logins over HTTP                    ${logins.toFixed(0).padStart(7)} logins/s  (key set fetched before the load: ${keySetFetches}× by the runtime and the floor together; during it: 0×)`);
    for (const [i, r] of httpRounds.entries()) console.log(describeLoad(`  round ${i + 1}`, r));
    console.log(`floor, HMAC secret as bytes (as TokenService)  ${median(rawFloors).toFixed(0).padStart(7)} logins/s (median of rounds)`);
    console.log(`floor, HMAC key imported once                  ${median(importedFloors).toFixed(0).padStart(7)} logins/s (median of rounds)`);
    console.log(describeRounds('logins ÷ the faster floor, by round', overFloor.rounds));
    console.log(goalLine('custom JWT logins ÷ crypto floor (the faster floor)', overFloor.ratio, '>=', LOGIN_GOAL));

    // Part 2 in a process of its own; the login runtime is done.
    await runtime.stop();
    servers.splice(servers.indexOf(runtime), 1);
    const owner = ownerEmail(7);
    const body = JSON.stringify({ query: GENERATED_QUERY, variables: { owner } });
    console.log(`auth overhead: one runtime, requests marked to skip authentication vs marked to authenticate, alternating in ${SLICE_MS} ms slices (the first ${SETTLE_MS} ms of each not counted) for ${OVERHEAD_SECONDS} s`);
    const server = await startServer({ kind: 'auth-bypass', appDir: workspace.appDir, dataDir: workspace.copyData('auth-bypass'), email: owner, password: PASSWORD });
    servers.push(server);
    // The same request bytes both ways (token included; the marker headers are as long as each other).
    const bearer = { authorization: `Bearer ${server.accessToken!}`, [AUTH_BYPASS_HEADER]: 'bearer' };
    const bypass = { ...bearer, [AUTH_BYPASS_HEADER]: 'bypass' };
    const withAuth = await post(server.graphqlUrl, JSON.parse(body), bearer);
    const withoutAuth = await post(server.graphqlUrl, JSON.parse(body), bypass);
    assert.equal((JSON.parse(withAuth.text) as { data: { items: unknown[] } }).data.items.length, PER_OWNER, withAuth.text.slice(0, 300));
    assert.equal(withoutAuth.text, withAuth.text, 'the bypassed request is answered differently');
    const refused = await post(server.graphqlUrl, JSON.parse(body), { [AUTH_BYPASS_HEADER]: 'bearer' });
    assert.equal(refused.status, 401, 'the runtime answered a request without credentials');
    await runLoad({ url: server.graphqlUrl, connections: CONNECTIONS, headers: bearer, body, expectBody: withAuth.text }, WARMUP_SECONDS);
    await runLoad({ url: server.graphqlUrl, connections: CONNECTIONS, headers: bypass, body, expectBody: withoutAuth.text }, WARMUP_SECONDS);
    const sliced = await measureAlternatingSlices({
      url: server.graphqlUrl, connections: CONNECTIONS,
      kinds: [{ name: 'bypass', headers: bypass, body, expectBody: withAuth.text }, { name: 'bearer', headers: bearer, body, expectBody: withAuth.text }],
      seconds: OVERHEAD_SECONDS, sliceMs: SLICE_MS, settleMs: SETTLE_MS,
    });
    const [bypassRates, bearerRates] = sliced.rates;
    console.log(`GraphQL, both kinds of request together       ${(sliced.requests / sliced.seconds).toFixed(0).padStart(7)} req/s  (${sliced.requests} requests in ${sliced.seconds.toFixed(1)} s, ${CONNECTIONS} connections)`);
    console.log(`  Authorization: Bearer (runtime)   ${median(bearerRates).toFixed(0).padStart(7)} req/s (median over its ${bearerRates.length} slices)`);
    console.log(`  authentication bypassed           ${median(bypassRates).toFixed(0).padStart(7)} req/s (median over its ${bypassRates.length} slices)`);
    // Time per request with auth ÷ without, pair by pair, as a percentage added.
    const added = sliced.ratios.map((ratio) => (ratio - 1) * 100);
    const sorted = [...added].sort((a, b) => a - b);
    const quartile = (q: number): number => sorted[Math.floor(q * (sorted.length - 1))]!;
    console.log(`per pair of slices, per cent added: quartiles ${quartile(0.25).toFixed(1)} / ${quartile(0.5).toFixed(1)} / ${quartile(0.75).toFixed(1)} over ${added.length} pairs`);
    console.log(goalLine('time bearer authentication adds to a GraphQL request', median(added), '<=', AUTH_OVERHEAD_GOAL_PERCENT, '%'));
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await keySetServer.close();
    workspace.remove();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
