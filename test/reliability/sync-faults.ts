// The reliability suite's sync fault parts against the shipped runtime (`dist/cli.js serve`), on loopback
// only, every process stopped by its PID:
//   network: ten realm-core clients per mode (partition, flexible) through the fault proxy (sync-faults-network.ts)
//   crash:   kill -9 of the runtime under 100 uploading raw clients per mode, round after round (sync-faults-crash.ts)
//   stall:   clients that stop reading during a large bootstrap and a fan-out (sync-faults-stall.ts)
// Prints one JSON line per part and mode (run.mjs reports them against the goals).
// Run: node --import tsx test/reliability/sync-faults.ts --part network|crash|stall [--short] [--mode partition|flexible]
import { crashUnderLoad } from './sync-faults-crash';
import { networkFaults } from './sync-faults-network';
import { stalledClients } from './sync-faults-stall';
import { FLEXIBLE, PARTITION } from './sync-fault-world';

const SHORT = process.argv.includes('--short');
const part = process.argv[process.argv.indexOf('--part') + 1];
/** `--mode partition|flexible`: one mode only (both by default). */
const only = process.argv.includes('--mode') ? process.argv[process.argv.indexOf('--mode') + 1] : undefined;

async function main(): Promise<void> {
  if (part === 'stall') {
    console.log(JSON.stringify(await stalledClients({ stalled: SHORT ? 100 : 1000, bootstrapObjects: 300, fanOutWrites: SHORT ? 200 : 600, probeWrites: 40, deadlineMs: 60_000 })));
    return;
  }
  for (const spec of [PARTITION, FLEXIBLE].filter((s) => !only || s.mode === only)) {
    if (part === 'network') {
      console.log(JSON.stringify(await networkFaults(spec, { devices: 10, faultMs: SHORT ? 10_000 : 40_000, convergeDeadlineMs: 30_000 })));
    } else if (part === 'crash') {
      console.log(JSON.stringify(await crashUnderLoad(spec, { users: SHORT ? 5 : 10, clientsPerUser: SHORT ? 20 : 10, probeDevices: SHORT ? 1 : 4, rounds: SHORT ? 3 : 10, writeGapMs: SHORT ? 300 : 600 })));
    } else {
      throw new Error(`--part network, crash or stall, not ${part}`);
    }
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
