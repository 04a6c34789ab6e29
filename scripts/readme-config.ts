// Prints the configuration table for the README (kept in sync by test/config.test.ts).
import { configDocs } from '../src/config/index.js';
process.stdout.write(configDocs() + '\n');
