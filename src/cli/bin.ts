/** Entry point of the `retrieval-sweep` command. */
import { main } from './main.js';

await main(process.argv);
