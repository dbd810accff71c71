// GraphQL throughput (issue 4): a generated query returning 20 of 10,000 documents through an indexed
// equality lookup, under 64 concurrent connections, measured in the same run against
//   (a) the runtime: bearer authentication, the collection's role evaluated for the user, the router, the endpoint;
//   (b) graphql-yoga 5 serving the same executable schema (generated schema + the runtime's resolvers) over
//       the same store, read as the system principal: no authentication, no rules      goal: (a) ≥ 3× (b)
//   (c) the floor: bare node:http running the query compiled once with graphql-jit over the same
//       executable schema and store, no authentication, no rules, no validation       goal: (a) ≥ 0.7× (c)
// Each server runs in its own process; autocannon drives them from this one, so server and load generator
// get a core each. Contenders are measured in alternating rounds.
// Run: node --import tsx bench/graphql.bench.ts [--seconds N] [--rounds N] [--connections N]
import assert from 'node:assert/strict';
import { createWorkspace, GENERATED_QUERY, ownerEmail, PASSWORD, PER_OWNER, DOCUMENTS } from './fixtures/app';
import {
  describeLoad, describeRounds, goalLine, measureInterleaved, option, post, registerAndLogin, startServer, throughputRatio,
  type Contender, type ServerProcess,
} from './fixtures/load';

const SECONDS = option('seconds', 5);
const ROUNDS = option('rounds', 3);
const WARMUP_SECONDS = option('warmup', 2);
const CONNECTIONS = option('connections', 64);
const YOGA_GOAL = 5;
const FLOOR_GOAL = 0.85;

async function main(): Promise<void> {
  const workspace = await createWorkspace();
  const servers: ServerProcess[] = [];
  try {
    const owner = ownerEmail(7);
    const runtime = await startServer({ kind: 'runtime', appDir: workspace.appDir, dataDir: workspace.copyData('runtime') });
    servers.push(runtime);
    const { access_token: token } = await registerAndLogin(runtime.appUrl!, owner, PASSWORD);
    const yoga = await startServer({ kind: 'yoga', appDir: workspace.appDir, dataDir: workspace.copyData('yoga') });
    servers.push(yoga);
    const floor = await startServer({ kind: 'floor', appDir: workspace.appDir, dataDir: workspace.copyData('floor') });
    servers.push(floor);

    const body = JSON.stringify({ query: GENERATED_QUERY, variables: { owner } });
    const bearer = { authorization: `Bearer ${token}` };
    const answers = {
      runtime: await post(runtime.graphqlUrl, JSON.parse(body), bearer),
      yoga: await post(yoga.graphqlUrl, JSON.parse(body)),
      floor: await post(floor.graphqlUrl, JSON.parse(body)),
    };
    const items = (JSON.parse(answers.runtime.text) as { data: { items: { owner: string }[] } }).data.items;
    assert.equal(items.length, PER_OWNER, `the runtime answered ${answers.runtime.text.slice(0, 300)}`);
    assert.ok(items.every((i) => i.owner === owner));
    for (const name of ['yoga', 'floor'] as const) {
      assert.deepEqual(JSON.parse(answers[name].text), JSON.parse(answers.runtime.text), `${name} answers differently`);
    }
    // The role really filters: asking for another owner's documents gives nothing back.
    const foreign = await post(runtime.graphqlUrl, { query: GENERATED_QUERY, variables: { owner: ownerEmail(8) } }, bearer);
    assert.deepEqual(JSON.parse(foreign.text), { data: { items: [] } }, 'the rule let another owner\'s documents through');

    console.log(`graphql bench: ${PER_OWNER} of ${DOCUMENTS} documents by an indexed owner, ${CONNECTIONS} connections, ${ROUNDS} rounds × ${SECONDS} s each after ${WARMUP_SECONDS} s warm-up`);
    console.log('servers each in a child process (one per contender, measured one at a time); autocannon in this process');
    const contenders: Contender[] = [
      { name: 'runtime', load: { url: runtime.graphqlUrl, connections: CONNECTIONS, headers: bearer, body, expectBody: answers.runtime.text } },
      { name: 'yoga', load: { url: yoga.graphqlUrl, connections: CONNECTIONS, body, expectBody: answers.yoga.text } },
      { name: 'floor', load: { url: floor.graphqlUrl, connections: CONNECTIONS, body, expectBody: answers.floor.text } },
    ];
    const results = await measureInterleaved(contenders, { warmupSeconds: WARMUP_SECONDS, seconds: SECONDS, rounds: ROUNDS });
    const [runtimeResult, yogaResult, floorResult] = ['runtime', 'yoga', 'floor'].map((name) => results.get(name)!);
    console.log(describeLoad('(a) runtime, bearer auth + rules', runtimeResult!.total));
    console.log(describeLoad('(b) graphql-yoga 5, no auth, no rules', yogaResult!.total));
    console.log(describeLoad('(c) floor: node:http + graphql-jit', floorResult!.total));
    const overYoga = throughputRatio(runtimeResult!, yogaResult!);
    const overFloor = throughputRatio(runtimeResult!, floorResult!);
    console.log(describeRounds('runtime ÷ yoga by round', overYoga.rounds));
    console.log(describeRounds('runtime ÷ floor by round', overFloor.rounds));
    console.log(`floor ÷ yoga (for reference): ${throughputRatio(floorResult!, yogaResult!).ratio.toFixed(2)}×`);
    console.log(goalLine('runtime ÷ yoga throughput', overYoga.ratio, '>=', YOGA_GOAL));
    console.log(goalLine('runtime ÷ floor throughput', overFloor.ratio, '>=', FLOOR_GOAL));
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    workspace.remove();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
