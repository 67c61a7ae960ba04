import { defineTool, deterministicEnv, Messages, ToolResults } from 'awaken-ts';
import { recordRun, ScriptedLlm } from 'awaken-ts/testing';
import { echoTranscript } from './echo-run.ts';

// `node --import tsx bench/echo-record.ts STEPS`: an echo run of STEPS steps recorded with the built
// package, its transcript on stdout. A bench that only replays records in this process of its own:
// recording enters an async context, after which Node hooks every promise of the process it ran in,
// and `awaken replay` runs in a process that never recorded.
const steps = Number(process.argv[2]);
if (!Number.isInteger(steps) || steps < 1) throw new Error(`echo-record: a number of steps, 1 or more (got ${process.argv[2]})`);
process.stdout.write(await echoTranscript({ defineTool, deterministicEnv, Messages, ToolResults, recordRun, ScriptedLlm }, steps));
