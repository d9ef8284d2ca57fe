// Ports for servers a test starts: see chaos/orchestrator/free-port.ts for why not port 0.
export { freePort } from '../../../chaos/orchestrator/free-port.js';
