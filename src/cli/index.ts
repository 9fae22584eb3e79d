import { main } from './main.js';

// Exit as soon as the command is done rather than when the last stray timer fires.
process.exit(await main(process.argv));
