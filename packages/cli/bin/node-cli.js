#!/usr/bin/env node
// Thin launcher so `npx node-cli` works right after `npm ci` (whose `prepare` step runs `tsc -b`).
import { main } from '../dist/src/main.js';

await main(process.argv);
