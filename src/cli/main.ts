import { dropIpServernameWarning } from './ip-servername-warning.js';
import { buildProgram } from './program.js';

dropIpServernameWarning();
const program = await buildProgram(process.argv);
await program.parseAsync(process.argv);
