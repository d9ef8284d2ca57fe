// Ledger process entry: `tsx chaos/ledger/ledger-main.ts [port] [host]`; prints {"port":N} on stdout.
import { startLedgerServer } from './ledger-server.js';
import { exitWithParent } from '../orchestrator/exit-with-parent.js';

// Started by the chaos orchestrator: go when it goes.
if (process.env.CHAOS_EXIT_WITH_PARENT === '1') exitWithParent();

const ledger = await startLedgerServer(Number(process.argv[2] ?? 0), process.argv[3] ?? '127.0.0.1');
process.stdout.write(`${JSON.stringify({ port: ledger.port })}\n`);
const stop = () => void ledger.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
