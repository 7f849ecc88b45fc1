// Runs a wasm32-wasip1 program under Node's built-in WASI (preview 1): node run-wasi.mjs
// PROGRAM.wasm ARGS... Its stdout and stderr are this process's; its exit code is ours.
import { readFile } from 'node:fs/promises';
import { argv, exit } from 'node:process';
import { WASI } from 'node:wasi';

const [program, ...args] = argv.slice(2);
const wasi = new WASI({ version: 'preview1', args: [program, ...args], env: {}, returnOnExit: true });
const module = await WebAssembly.compile(await readFile(program));
// `wasiImport` rather than `getImportObject()` (Node 19.8+): Debian 12's Node 18 has only it.
const instance = await WebAssembly.instantiate(module, { wasi_snapshot_preview1: wasi.wasiImport });
exit(wasi.start(instance));
