// The sync fault parts of the reliability suite (run.mjs): sync-faults.ts in a child (it drives realm-core's
// client and our protocol codec through tsx), one JSON line per part and mode, reported here against the goals.
import { spawn } from 'node:child_process';
import path from 'node:path';

/** A heap that grows by more than this across the faults (after a full GC, sessions gone) is a leak. */
const HEAP_GROWTH_GOAL_MIB = 16;
const CONVERGENCE_GOAL_MS = 10_000;
/** A stalled reader may cost the runtime its send high-water mark (1 MiB), one DOWNLOAD past it and its bootstrap. */
const STALLED_CLIENT_BUDGET_MIB = 2;
const STALL_BASE_BUDGET_MIB = 256;
/** Latency beside the stalled clients: within 2x the quiet p95, which on an idle box is a few ms (so a floor). */
const LATENCY_FLOOR_MS = 100;

function runPart(repo, here, part, short) {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(here, 'sync-faults.ts'), '--part', part, ...(short ? ['--short'] : [])], { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { err = (err + d).slice(-4000); });
  return new Promise((resolve) => child.once('exit', (code) => {
    const lines = out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
    resolve({ code, lines, err });
  }));
}

export async function syncFaultsSuite({ figure, repo, here, short }) {
  const network = await runPart(repo, here, 'network', short);
  for (const r of network.lines) {
    const faulted = r.cut > 0 && r.stalled > 0 && r.refusals > 0;
    figure(`sync under network faults (${r.mode}): ${r.devices} realm-core clients on one ${r.mode === 'partition' ? 'partition' : 'subscription'}, ${r.runs} runs offline and online over ${r.faultSeconds} s through ${r.connections} sync connections (${r.cut} cut after 0.2-2.7 KB, ${r.stalled} stalled half-open, ${r.refusals} refusal windows, all slowed by latency, jitter or a bandwidth cap; ${r.failedRuns} runs timed out or were cut): ${r.written} objects written, ${r.acknowledged} acknowledged (${r.acknowledgedDuringFaults} during the faults); ${r.lost} lost, ${r.duplicated} duplicated, ${r.resets} client resets, ${r.disagreeing} objects on which devices, documents, GraphQL and the history disagree (goal 0 / 0 / 0 / 0, with every fault seen)`,
      faulted && r.acknowledgedDuringFaults > 0 && r.lost === 0 && r.duplicated === 0 && r.resets === 0 && r.disagreeing === 0);
    figure(`sync under network faults (${r.mode}): converged ${r.convergedMs === null ? 'NEVER (within 30 s)' : `${(r.convergedMs / 1000).toFixed(1)} s`} after the faults ended; the runtime's heap after a full GC ${r.heapBeforeMiB} -> ${r.heapAfterMiB} MiB across the faults (RSS ${r.rssBeforeMiB} -> ${r.rssAfterMiB} MiB) (goal <= ${CONVERGENCE_GOAL_MS / 1000} s / growth <= ${HEAP_GROWTH_GOAL_MIB} MiB)`,
      r.convergedMs !== null && r.convergedMs <= CONVERGENCE_GOAL_MS && r.heapAfterMiB - r.heapBeforeMiB <= HEAP_GROWTH_GOAL_MIB);
  }
  if (network.code !== 0 || network.lines.length !== 2) figure(`sync under network faults: the part failed (exit ${network.code}): ${network.err.slice(-1500)}`, false);

  const crash = await runPart(repo, here, 'crash', short);
  for (const r of crash.lines) {
    for (const sample of r.errorSamples) console.log(`  ${sample}`);
    figure(`sync crash under load (${r.mode}): kill -9 of the runtime x ${r.rounds} while ${r.clients} raw clients and ${r.probeDevices} realm-core clients upload, restarted on the same data folder (restarts ${r.restartMs.map((ms) => (ms / 1000).toFixed(1)).join(', ')} s): ${r.changesets} raw changesets and the realm-core clients' writes, ${r.acknowledged} acknowledged (${r.acknowledgedBeforeACrash} of them before the last crash), ${r.unacknowledgedAtEnd} never acknowledged; ${r.lost} lost, ${r.duplicated} duplicated, ${r.resets} resets or errors, ${r.historyDisagrees} objects on which history, documents and GraphQL disagree (goal 0 / 0 / 0 / 0 / 0)`,
      r.unacknowledgedAtEnd === 0 && r.acknowledgedBeforeACrash > 0 && r.lost === 0 && r.duplicated === 0 && r.resets === 0 && r.historyDisagrees === 0);
  }
  if (crash.code !== 0 || crash.lines.length !== 2) figure(`sync crash under load: the part failed (exit ${crash.code}): ${crash.err.slice(-1500)}`, false);
}

export async function stalledClientsSuite({ figure, repo, here, short }) {
  const stall = await runPart(repo, here, 'stall', short);
  const r = stall.lines[0];
  if (stall.code !== 0 || !r) {
    figure(`sync stalled clients: the part failed (exit ${stall.code}): ${stall.err.slice(-1500)}`, false);
    return;
  }
  const limitMiB = r.rssBeforeMiB + STALL_BASE_BUDGET_MIB + STALLED_CLIENT_BUDGET_MIB * r.stalled;
  const latencyGoal = Math.max(2 * r.quietP95Ms, LATENCY_FLOOR_MS);
  figure(`sync stalled clients: ${r.stalled} client files stop reading before a ${r.bootstrapMiB} MiB bootstrap while ${r.fanOutMiB} MiB fans out to each: runtime RSS ${r.rssBeforeMiB} -> peak ${r.rssPeakMiB} MiB (the kernel held ${r.tcpPeakMiB} MiB of TCP buffers at most), all disconnected after ${(r.closedAfterMs / 1000).toFixed(1)} s (${r.stillOpen} still connected), heap + external after a full GC ${(r.heapBeforeMiB + r.externalBeforeMiB).toFixed(1)} -> ${(r.heapAfterMiB + r.externalAfterMiB).toFixed(1)} MiB (goal peak <= ${limitMiB.toFixed(0)} MiB: before + ${STALL_BASE_BUDGET_MIB} MiB + ${STALLED_CLIENT_BUDGET_MIB} MiB per stalled client / 0 still connected / back within 64 MiB)`,
    r.rssPeakMiB <= limitMiB && r.stillOpen === 0 && r.heapAfterMiB + r.externalAfterMiB <= r.heapBeforeMiB + r.externalBeforeMiB + 64);
  figure(`sync stalled clients: an innocent watcher's write -> DOWNLOAD p95 ${r.quietP95Ms} ms quiet, ${r.stalledP95Ms} ms beside the ${r.stalled} stalled clients (goal <= 2x quiet, floor ${LATENCY_FLOOR_MS} ms: <= ${latencyGoal.toFixed(1)} ms)`,
    r.stalledP95Ms <= latencyGoal);
}
